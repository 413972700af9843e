"""The fx level's record of submodule calls (LevelResult.scopes): each instance's class and the span of
the line that called it, which the graph view's group boxes reveal. On the benchmarks' GPT-2-shaped decoder
(bench/models/gpt2_small.py)."""

from __future__ import annotations

import json
from pathlib import Path

from fxlens_command import fxlens

ROOT = Path(__file__).resolve().parents[3]
GPT2 = ROOT / "bench" / "models" / "gpt2_small.py"


def _fx_json() -> dict:
    run = fxlens("graph", str(GPT2), "--class", "GPT", "--level", "fx", "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_each_submodule_call_has_its_class_and_call_line():
    data = _fx_json()
    scopes = data["scopes"]
    lines = GPT2.read_text().splitlines()
    block = scopes["blocks.3"]
    assert block["class"] == "Block"
    assert lines[block["line"] - 1].strip() == "x = block(x)"  # the loop in GPT.forward
    attn = scopes["blocks.3.attn"]
    assert attn["class"] == "CausalSelfAttention"
    assert lines[attn["line"] - 1].encode()[attn["col"] : attn["end_col"]] == b"self.attn(self.norm1(x))"
    assert scopes["blocks.3.attn.qkv"]["class"] == "Linear"
    # every scope a node carries is a module that was called
    assert {n["scope"] for n in data["nodes"] if n["scope"]} <= set(scopes)

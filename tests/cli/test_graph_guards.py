"""`fxlens graph --level dynamo --json` carries the guards of each compiled frame and the recompile proof."""

from __future__ import annotations

import json

from fxlens_command import ROOT, fxlens

GUARDED = ROOT / "tests" / "fixtures" / "lsp" / "guarded.py"


def test_graph_json_has_the_compiled_frames_guards_and_the_dynamic_proof():
    run = fxlens("graph", str(GUARDED), "--class", "Blend", "--level", "dynamo", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    [frame] = data["frames"]
    assert (frame["function"], frame["compile_id"], frame["cut"]) == ("Blend.forward", "0/0", 0)
    repeats = next(g for g in frame["guards"] if g["source"] == "L['repeats']")
    assert (repeats["kind"], repeats["code"], repeats["value"], repeats["role"]) == (
        "EQUALS_MATCH",
        "L['repeats'] == 2",
        "2",
        "input",
    )
    proof = data["dynamic"]
    assert (proof["static_recompiles"], proof["dynamic_recompiles"], proof["outputs"]) == (1, 0, "equal")

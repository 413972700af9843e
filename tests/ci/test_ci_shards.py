"""`fxlens check --shard K/N` and `fxlens merge`: a 30-file tree checked in 3 shards gives, merged, the
findings and exit status of one run over the whole tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fxlens.ci.shards import parse_shard, split

ROOT = Path(__file__).resolve().parents[2]
FILE = """import torch
from torch import nn


class Model{index}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear({width}, {width})

    def forward(self, x):
        y = self.fc(x)
{body}
"""
CLEAN = "        return torch.relu(y)"
BRANCH = "        if y.sum() > 0:\n            return y\n        return -y"


def _fxlens(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    return subprocess.run(
        [sys.executable, "-m", "fxlens", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("monorepo")
    for index in range(30):
        folder = root / f"team{index % 4}" / f"project{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"model_{index}.py").write_text(
            FILE.format(index=index, width=4 + index % 5, body=BRANCH if index % 6 == 0 else CLEAN)
        )
    return root


def test_the_split_is_stable_complete_and_balanced_by_recorded_costs():
    paths = [f"pkg/m{i}.py" for i in range(30)]
    parts = split(paths, 3)
    assert sorted(p for part in parts for p in part) == sorted(paths) and all(parts)
    assert split(paths, 3) == parts  # every shard computes the same split
    grown = split([*paths, "pkg/new.py"], 3)
    for before, after in zip(parts, grown):
        assert [p for p in after if p != "pkg/new.py"] == before  # a new file moves no other
    costs = {p: (10.0 if i < 3 else 1.0) for i, p in enumerate(paths)}
    balanced = split(paths, 3, costs)
    loads = [sum(costs[p] for p in part) for part in balanced]
    assert max(loads) - min(loads) <= 1.0
    assert all(sum(costs[p] == 10.0 for p in part) == 1 for part in balanced)  # the slow files spread out
    with pytest.raises(ValueError, match="K/N"):
        parse_shard("4/3")


@pytest.mark.parametrize("kind", ["json", "sarif"])
def test_three_shards_merged_equal_one_run(tree, tmp_path, kind):
    whole = _fxlens("check", ".", "--level", "fx", "--format", kind, "--no-cache", "-j", "2", cwd=tree)
    assert whole.returncode == 1, whole.stderr  # the branches are errors
    outputs = [str(tmp_path / f"shard{k}.{kind}") for k in (1, 2, 3)]

    def shard(k: int) -> subprocess.CompletedProcess:
        # a shard's ten files on one worker (as CI machines run them, side by side); the whole run's two workers
        # are what the shards are compared with
        args = ("--no-cache", "-j", "1", "--shard", f"{k}/3", "-o", outputs[k - 1])
        return _fxlens("check", ".", "--level", "fx", "--format", kind, *args, cwd=tree)

    with ThreadPoolExecutor(3) as pool:
        for done in pool.map(shard, (1, 2, 3)):
            assert done.returncode in (0, 1), done.stderr
    merged = _fxlens("merge", *outputs, cwd=tree)
    assert merged.returncode == whole.returncode, merged.stderr
    one, joined = json.loads(whole.stdout), json.loads(merged.stdout)
    if kind == "json":
        assert joined["diagnostics"] == one["diagnostics"] and len(one["diagnostics"]) == 5
        for key in ("files", "errors", "warnings"):
            assert joined["summary"][key] == one["summary"][key]
    else:

        def results(log):
            return [
                (
                    r["ruleId"],
                    r["level"],
                    r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                    r["message"]["text"],
                )
                for r in log["runs"][0]["results"]
            ]

        assert results(joined) == results(one) and len(results(one)) == 5
        assert joined["runs"][0]["tool"]["driver"]["rules"] == one["runs"][0]["tool"]["driver"]["rules"]


def test_merge_refuses_text_output_with_a_message(tmp_path):
    text = tmp_path / "shard.txt"
    text.write_text("a.py:1:1: error: x [load]\n")
    run = _fxlens("merge", str(text), cwd=tmp_path)
    assert run.returncode == 2 and "--format json" in run.stderr

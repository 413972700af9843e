"""`fxlens diff` in a throwaway git repository: a commit, then an edit that adds a layer, then one that
adds a data-dependent branch; the report lists the new node and the new break, `--fail-on` gates."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fxlens_command import fxlens

BASE = """import torch
from torch import nn

from layers import Scale


# fxlens: Net()(torch.randn(2, 8))
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = Scale()

    def forward(self, x):
        x = self.fc(x)
        return self.scale(torch.relu(x))


class Untouched(nn.Module):
    def forward(self, x):
        return x + 1
"""
LAYERS = "import torch\n\n\nclass Scale(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _committed_base(root: Path) -> Path:
    """A repository whose one commit holds BASE's model.py and LAYERS' layers.py."""
    root.mkdir()
    (root / "model.py").write_text(BASE)
    (root / "layers.py").write_text(LAYERS)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    return root


def _diff(root: Path, *args: str) -> subprocess.CompletedProcess:
    return fxlens("diff", "--level", "fx", "--level", "dynamo", *args, cwd=root)


def _diffs(root: Path, *runs: tuple[str, ...]) -> list[subprocess.CompletedProcess]:
    """Several `fxlens diff` runs of the same tree state, each its own process, at once."""
    with ThreadPoolExecutor(len(runs)) as pool:
        return list(pool.map(lambda args: _diff(root, *args), runs))


def _net(data: dict) -> dict:
    (model,) = [f for f in data["files"] if f["path"] == "model.py"]
    return {c["class"]: c for c in model["classes"]}


def test_diff_lists_a_new_layer_and_a_new_break_and_gates(tmp_path):
    root = _committed_base(tmp_path / "repo")

    clean = _diff(root, "--json", "--fail-on", "any-change")
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["files"] == []

    layer = BASE.replace(
        "        self.scale = Scale()\n", "        self.scale = Scale()\n        self.fc2 = nn.Linear(8, 8)\n"
    )
    layer = layer.replace("        x = self.fc(x)\n", "        x = self.fc(x)\n        x = self.fc2(x)\n")
    (root / "model.py").write_text(layer)
    run, any_change = _diffs(
        root, ("--json", "--fail-on", "new-break", "--fail-on", "new-failure"), ("--fail-on", "any-change")
    )
    assert run.returncode == 0, run.stderr
    classes = _net(json.loads(run.stdout))
    assert classes["Untouched"]["status"] == "same"
    fx = next(level for level in classes["Net"]["levels"] if level["level"] == "fx")
    assert (fx["before"]["by_op"]["call_module"], fx["after"]["by_op"]["call_module"]) == (
        1,
        2,
    )  # Scale is traced through
    assert fx["added"] == [{"kind": "call_module", "target": "fc2", "line": 17, "text": "x = self.fc2(x)"}]
    assert fx["removed"] == [] and fx["new_failures"] == []  # the moved lines are not changes
    assert any_change.returncode == 1

    branch = layer.replace(
        "        x = self.fc2(x)\n", "        x = self.fc2(x)\n        if x.sum() > 0:\n            x = -x\n"
    )
    (root / "model.py").write_text(branch)
    run, markdown, unknown_ref = _diffs(
        root,
        ("--json", "--fail-on", "new-break"),
        ("--format", "markdown", "--fail-on", "new-failure"),
        ("no-such-ref",),
    )
    assert run.returncode == 1, run.stderr
    levels = {level["level"]: level for level in _net(json.loads(run.stdout))["Net"]["levels"]}
    assert [(f["kind"], f["line"], f["text"]) for f in levels["fx"]["new_failures"]] == [
        ("data-dependent-control-flow", 18, "if x.sum() > 0:")
    ]
    assert [(b["kind"], b["line"]) for b in levels["dynamo"]["new_breaks"]] == [("graph-break", 18)]
    assert any(n["line"] == 17 and "linear" in n["target"] for n in levels["dynamo"]["added"])

    assert markdown.returncode == 1
    assert "#### `model.py` · `Net`" in markdown.stdout and "+1 break" in markdown.stdout
    assert "new graph break (line 18, graph-break)" in markdown.stdout
    assert "`x = self.fc2(x)`" in markdown.stdout
    assert unknown_ref.returncode == 2  # a ref git does not know is a usage error


def test_a_class_whose_file_did_not_change_is_compared_when_code_it_imports_did(tmp_path):
    root = _committed_base(tmp_path / "repo")

    (root / "layers.py").write_text(LAYERS.replace("return x * 2", "return x * 2 + 1"))
    run = _diff(root, "--json")
    assert run.returncode == 0, run.stderr
    classes = _net(json.loads(run.stdout))  # model.py is listed though only layers.py changed
    assert classes["Net"]["status"] == "changed" and classes["Untouched"]["status"] == "same"
    fx = next(level for level in classes["Net"]["levels"] if level["level"] == "fx")
    assert fx["after"]["nodes"] == fx["before"]["nodes"] + 1  # Scale's `+ 1`, traced through from Net

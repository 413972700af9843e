"""`fxlens check --fix` and `--diff` as a user runs them: the proven fixes applied in place (and said), or
shown as a diff with nothing written; the fixed file then traces where the original did not."""

from __future__ import annotations

import shutil

import torch
import torch.fx
from fxlens_command import ROOT, fxlens

GATES = ROOT / "tests" / "fixtures" / "fixes" / "gates.py"


def _copy(tmp_path):
    target = tmp_path / "gates.py"
    shutil.copy(GATES, target)
    return target


def test_diff_prints_the_proven_fixes_and_writes_nothing(tmp_path):
    target = _copy(tmp_path)
    run = fxlens("check", "--diff", "--no-cache", "--level", "fx", "gates.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr  # fixes to apply, as `ruff --diff` says
    assert target.read_text() == GATES.read_text()
    assert "--- a/gates.py\n+++ b/gates.py\n" in run.stdout
    removed = [line for line in run.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in run.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == [
        "-        if h.mean() > 0:",
        "-            out = x + h",
        "-        else:",
        "-            out = x - 0.5 * h",
        "-        scale = max(h.norm(), 1e-3)",
    ]
    assert added == [
        "+        out = torch.where(h.mean() > 0, x + h, x - 0.5 * h)",
        "+        scale = torch.clamp(h.norm(), min=1e-3)",
    ]
    assert "2 proven fix(es) shown, nothing written" in run.stderr


def test_fix_applies_in_place_says_what_changed_and_leaves_the_unfixable(tmp_path):
    target = _copy(tmp_path)
    run = fxlens("check", "--fix", "--no-cache", "--level", "fx", "gates.py", cwd=tmp_path)
    assert (
        "gates.py:17:12: fixed [torch-where] Replace with torch.where — fx failures 1 → 0, outputs equal on 3 inputs"
        in run.stderr
    )
    assert "gates.py:34:17: fixed [builtin-op] Use the torch op" in run.stderr
    # CountingGate's branch changes a buffer: no fix, and the finding says why, at its line in the fixed file
    assert run.returncode == 1
    assert run.stdout.strip().startswith("gates.py:45:12: error: ")
    assert "1 error(s), 2 fixed" in run.stderr
    namespace: dict = {}
    exec(compile(target.read_text(), str(target), "exec"), namespace)
    torch.fx.symbolic_trace(namespace["ResidualGate"]())  # traces now (the original raises TraceError)
    torch.fx.symbolic_trace(namespace["FloorScale"]())


def test_fix_json_says_why_a_finding_has_no_fix(tmp_path):
    _copy(tmp_path)
    run = fxlens("check", "--fix", "--no-cache", "--level", "fx", "--format", "json", "gates.py", cwd=tmp_path)
    import json

    (left,) = json.loads(run.stdout)["diagnostics"]
    assert left["class_name"] == "CountingGate"
    assert "`Replace with torch.where` is not offered: a branch changes module state (`self.opened`)" in left["fix"]

"""`fxlens check --fix` and `--diff` as a user runs them: the proven fixes applied in place (and said), or
shown as a diff with nothing written; the fixed file then traces where the original did not."""

from __future__ import annotations

import json
import shutil

import jsonschema
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
    (left,) = json.loads(run.stdout)["diagnostics"]
    assert left["class_name"] == "CountingGate"
    # (torch.where and torch.cond both decline it: the later, more general rewrite's reason is said)
    assert "`Use torch.cond` is not offered: a branch changes module state (`self.opened`)" in left["fix"]


def _replaced(text: str, replacements: list[dict]) -> str:
    """SARIF replacements (1-based lines and character columns) made from the last to the first."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for r in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]))[
        ::-1
    ]:
        region = r["deletedRegion"]
        start = starts[region["startLine"] - 1] + region["startColumn"] - 1
        end = starts[region["endLine"] - 1] + region["endColumn"] - 1
        text = text[:start] + r["insertedContent"]["text"] + text[end:]
    return text


def test_show_fixes_carries_edits_and_proof_in_json_and_sarif_the_same_as_fix(tmp_path):
    _copy(tmp_path)
    run = fxlens("check", "--show-fixes", "--no-cache", "--level", "fx", "--format", "json", "gates.py", cwd=tmp_path)
    by_class = {d["class_name"]: d for d in json.loads(run.stdout)["diagnostics"]}
    (where,) = by_class["ResidualGate"]["fixes"]
    assert where["proven"] and where["rule"] == "torch-where"
    assert where["proof"]["outputs"] == "equal" and where["proof"]["inputs"] == 3
    assert where["proof"]["levels"] == [where["proof"]["levels"][0] | {"level": "fx", "before": 1, "after": 0}]
    (counting,) = by_class["CountingGate"]["fixes"]
    assert not counting["proven"] and counting["edits"] == [] and "self.opened" in counting["why_not"]

    sarif = fxlens("check", "--show-fixes", "--level", "fx", "--format", "sarif", "gates.py", cwd=tmp_path)
    log = json.loads(sarif.stdout)
    schemas = ROOT / ".ci" / "sarif-schema" / "node_modules" / "@microsoft" / "jest-sarif" / "lib" / "schemas"
    jsonschema.validate(log, json.loads((schemas / "sarif-2.1.0-rtm.5.json").read_text()))
    results = log["runs"][0]["results"]
    assert [r["properties"]["class"] for r in results if r.get("fixes")] == ["ResidualGate", "FloorScale"]
    replacements = [
        rep
        for r in results
        for fix in r.get("fixes", [])
        for change in fix["artifactChanges"]
        for rep in change["replacements"]
    ]
    fixed = fxlens("check", "--fix", "--level", "fx", "gates.py", cwd=tmp_path)
    assert "2 fixed" in fixed.stderr
    assert _replaced(GATES.read_text(), replacements) == (tmp_path / "gates.py").read_text()

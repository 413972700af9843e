"""`fxlens check --verbose`: an internal error of fxlens is followed by its Python traceback, the one
thing a bug report needs; without the flag the finding stays one line. The files reach into fxlens's own
level table from user code (it runs in the trace child), so fxlens really fails inside itself."""

from __future__ import annotations

import json

from fxlens_command import ROOT, fxlens

INTERNAL = ROOT / "tests" / "fixtures" / "internal"


def _indented_block(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("    ")]


def test_a_level_failing_inside_fxlens_shows_its_traceback_with_verbose():
    path = INTERNAL / "rewired_level.py"
    run = fxlens("check", "--no-cache", "--verbose", "--level", "fx", "--level", "aten", str(path))
    assert run.returncode == 1, run.stderr
    (finding,) = [line for line in run.stdout.splitlines() if not line.startswith(" ")]
    assert finding.endswith("KeyError: 'a level nobody registered' [internal] (Mlp, aten)")
    block = _indented_block(run.stdout)
    assert block[0].strip() == "Traceback (most recent call last):"
    assert any("fxlens/worker/analysis/analyse.py" in line and "_trace_levels" in line for line in block)
    assert any(f'File "{path}", line 8, in <lambda>' in line for line in block)
    assert block[-1].strip() == "KeyError: 'a level nobody registered'"

    quiet = fxlens("check", "--no-cache", "--level", "fx", "--level", "aten", str(path))
    assert quiet.stdout.splitlines() == [finding]


def test_an_analysis_that_fails_as_a_whole_carries_its_traceback_in_json_and_verbose_text():
    path = INTERNAL / "broken_result.py"
    run = fxlens("check", "--no-cache", "--format", "json", str(path))
    (diagnostic,) = json.loads(run.stdout)["diagnostics"]
    assert diagnostic["category"] == "internal"
    assert diagnostic["message"] == "AttributeError: 'NoneType' object has no attribute 'nodes'"
    assert diagnostic["traceback"].startswith("Traceback (most recent call last):")
    assert "fxlens/worker/analysis/bounds.py" in diagnostic["traceback"]

    verbose = fxlens("check", "--no-cache", "-v", str(path))
    assert "\n".join(line[4:] for line in _indented_block(verbose.stdout)) == diagnostic["traceback"].rstrip("\n")


def test_a_finding_of_the_users_code_has_no_traceback():
    run = fxlens(
        "check",
        "--no-cache",
        "--verbose",
        "--format",
        "json",
        str(ROOT / "tests" / "fixtures" / "models" / "failures.py"),
    )
    found = json.loads(run.stdout)["diagnostics"]
    assert found and all(d["traceback"] is None for d in found)

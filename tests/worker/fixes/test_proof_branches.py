"""A fix's proof compares outputs on inputs that run each line the fix replaces (worker/fixes/coverage.py), or says
which line none ran; and an `elif`'s finding is fixed by rewriting its whole chain: the proof once passed a rewrite
of the `elif` alone, which overwrote what the `if` branch set, because no input it drew took that branch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fix_support import load_text, report_with_fixes
from fxlens.engine.fixes import apply_fix
from fxlens.fix_report import apply_fixes
from fxlens.report import FileReport

FILE = Path(__file__).resolve().parents[2] / "fixtures" / "fix_branches.py"
TEXT = FILE.read_text()


@pytest.fixture(scope="module")
def report() -> FileReport:
    return report_with_fixes(FILE, ("fx", "dynamo"), TEXT)


def _line(text: str) -> int:
    return next(i for i, line in enumerate(TEXT.splitlines(), 1) if text in line)


def test_an_elif_chain_is_rewritten_whole_and_proven_on_each_of_its_branches(report):
    fixes = report.find_class("BandedScale").fixes
    assert [f.line for f in fixes] == [_line("if level > 1.0:"), _line("elif level > 0.0:")]
    first, elif_ = fixes
    assert first.proven and elif_.proven and elif_.edits == first.edits
    assert [e.new_text for e in first.edits] == [
        "out = torch.where(level > 1.0, h * 0.5, torch.where(level > 0.0, h, h * 2.0))"
    ]
    assert first.proof.inputs > 3  # the draws took only some branches: variants were added until each ran
    fixed_text, applied = apply_fixes(TEXT, fixes)  # as fix-all and --fix apply them
    assert fixed_text == apply_fix(TEXT, first) and applied == fixes  # the elif's finding is fixed by the same edit
    # torch itself, on inputs that take each branch
    original = load_text("branches_original", TEXT).BandedScale()
    fixed = load_text("branches_fixed", fixed_text).BandedScale()
    fixed.load_state_dict(original.state_dict())
    taken = set()
    for seed in range(5):
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))
        for scale in (1.0, -1.0, 10.0, -10.0, 100.0, -100.0):
            level = float(original.proj(x * scale).mean().detach())
            taken.add(0 if level > 1.0 else 1 if level > 0.0 else 2)
            assert torch.equal(fixed(x * scale), original(x * scale))
    assert taken == {0, 1, 2}


def test_a_branch_no_input_reaches_is_said_in_the_proof(report):
    (guard,) = report.find_class("OverflowGuard").fixes
    line = _line("h = h * 1e-6")
    assert guard.proof.unreached == [line]
    assert guard.label().endswith(f", none of which runs line {line}")

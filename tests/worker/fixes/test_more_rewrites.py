"""The rewrites beyond slice one, on the corpus's normalisation layers at the fx level: each proven, each edit
as a person would write it, and the fixed file traced by torch itself with the original's outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.fx
from fix_support import load_text, report_with_fixes
from fxlens.engine.fixes import apply_all
from fxlens.report import FileReport

NORMS = Path(__file__).resolve().parents[2] / "fixtures" / "fixes" / "norms.py"


@pytest.fixture(scope="module")
def norms() -> FileReport:
    return report_with_fixes(NORMS, ("fx",))


def _edit(report: FileReport, class_name: str) -> tuple[str, str]:
    (fix,) = report.find_class(class_name).fixes
    assert fix.proven, fix.why_not()
    (edit,) = fix.edits
    return fix.rule, edit.new_text


def test_each_rewrite_proposes_what_a_person_would_write(norms):
    assert _edit(norms, "CheckedRMSNorm") == (
        "torch-assert",
        'torch._assert(torch.isfinite(x).all(), "RMSNorm got a non-finite input")',
    )
    assert _edit(norms, "BatchAverage") == ("shape-not-len", "x.shape[0]")
    assert _edit(norms, "CenteredNorm") == ("keep-tensor", "h.mean()")
    assert _edit(norms, "ClippedNorm") == (
        "torch-where",
        "return torch.where(x.abs().max() > limit, limit * torch.tanh(x / limit), x)",
    )
    assert _edit(norms, "GainNorm") == ("torch-where", "y = torch.where(x.abs().mean() < 0.1, y * (2.0), y)")


def test_the_fixed_file_traces_in_torch_with_the_original_outputs(norms):
    text = NORMS.read_text()
    fixed_text, applied = apply_all(text, norms)
    assert len(applied) >= 5
    original, fixed = load_text("norms_original", text), load_text("norms_fixed", fixed_text)
    for name in ("CheckedRMSNorm", "FloorRMSNorm", "CenteredNorm", "BatchAverage", "ClippedNorm", "GainNorm"):
        torch.manual_seed(0)
        before = getattr(original, name)()
        after = getattr(fixed, name)()
        after.load_state_dict(before.state_dict())
        graph = torch.fx.symbolic_trace(after)
        for seed in (11, 12):
            x = torch.randn(4, 32, generator=torch.Generator().manual_seed(seed))
            for inputs in (x, -x, x * 0.01):
                torch.testing.assert_close(graph(inputs), before(inputs), rtol=1e-5, atol=1e-6)

"""NumPy reductions of a tensor's values (`float(np.percentile(h.detach().numpy(), 95))`, `np.median(...).item()`,
`torch.tensor(quantile(...), dtype=...)`) become the torch op, proven at fx and aten, and checked in torch
itself: the fixed class traces under symbolic_trace and torch.export where the original failed both, and its
outputs are NumPy's, on inputs the proof never drew. A NumPy call with an `axis=` has no such fix, and says why.
(bridges.py's PercentileClip: test_input_fixes.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.fx
from fix_support import load_text, only_fix, report_with_fixes
from fxlens.fix_report import apply_edits
from fxlens.report import FileReport

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
STATISTICS = FIXTURES / "statistics.py"
LEVELS = ("fx", "aten")
FIXED = {
    "MedianCentre": "torch.quantile(h.detach(), 0.5)",
    "SpreadScale": "h.detach().std(correction=0)",
    "QuantileGate": "torch.quantile(h.detach(), 0.25).to(dtype=h.dtype)",
    "NormRescale": "h.detach().norm()",
}


@pytest.fixture(scope="module")
def statistics() -> FileReport:
    return report_with_fixes(STATISTICS, LEVELS)


def _checked_in_torch(text: str, fixed_text: str, name: str) -> None:
    """The original fails fx and export; the fixed class traces at both and gives the original's outputs."""
    original = getattr(load_text(f"{name}_original", text), name)()
    fixed = getattr(load_text(f"{name}_fixed", fixed_text), name)()
    fixed.load_state_dict(original.state_dict())
    x = torch.randn(4, 12, generator=torch.Generator().manual_seed(11))
    with pytest.raises(Exception):  # noqa: B017  (NumPy's ValueError or fx's TypeError, by the op)
        torch.fx.symbolic_trace(original)
    with pytest.raises(Exception):  # noqa: B017
        torch.export.export(original, (x,))
    graph = torch.fx.symbolic_trace(fixed)
    exported = torch.export.export(fixed, (x,)).module()
    for seed in (12, 13):
        for inputs in (x, -x, 10 * x, torch.randn(4, 12, generator=torch.Generator().manual_seed(seed))):
            with torch.no_grad():
                want = original(inputs)
                for got in (graph(inputs), exported(inputs)):
                    assert got.dtype == want.dtype
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FIXED))
def test_a_numpy_reduction_becomes_the_torch_op_that_traces_with_numpys_values(statistics, name):
    fix = only_fix(statistics, name)
    assert fix.proven and fix.rule == "numpy-op", fix.why_not()
    assert [e.new_text for e in fix.edits] == [FIXED[name]]
    assert [(c.level, c.before, c.after) for c in fix.proof.levels] == [("fx", 1, 0), ("aten", 1, 0)]
    text = STATISTICS.read_text()
    _checked_in_torch(text, apply_edits(text, fix.edits), name)


def test_a_numpy_call_with_an_axis_gets_no_fix_and_says_why(statistics):
    fix = only_fix(statistics, "ColumnPercentileClip")
    assert not fix.proven and fix.edits == []
    assert "leaves torch (`.numpy()`) for code that is not torch's" in fix.why_not()

"""The rewrites of what forward does with what it is given, on the corpus's signatures.py and bridges.py at the
fx level: in-place updates made out of place (the caller's changed tensor said, or the fix declined where a
caller relies on it), mutable defaults made None, NumPy and list round trips kept tensors, a NumPy percentile
made torch.quantile, `sum` of a tensor. Each proven fix is checked against torch itself: the fixed class traces
with symbolic_trace and gives the original's outputs; the proof's own input check is shown failing a rewrite
that drops an update through a view."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.fx
from fix_support import load_text, only_fix, report_with_fixes
from fxlens.engine.fixes import apply_fix
from fxlens.fix_report import Fix
from fxlens.report import FileReport

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
SIGNATURES, BRIDGES = FIXTURES / "signatures.py", FIXTURES / "bridges.py"


@pytest.fixture(scope="module")
def signatures() -> FileReport:
    return report_with_fixes(SIGNATURES, ("fx",))


@pytest.fixture(scope="module")
def bridges() -> FileReport:
    return report_with_fixes(BRIDGES, ("fx",))


def _pair(path: Path, fix: Fix, class_name: str):
    """The original class and the fixed one, with the same weights."""
    text = path.read_text()
    torch.manual_seed(0)
    original = getattr(load_text(f"{path.stem}_original", text), class_name)()
    fixed = getattr(load_text(f"{path.stem}_fixed_{class_name}", apply_fix(text, fix)), class_name)()
    fixed.load_state_dict(original.state_dict())
    return original, fixed


def test_an_input_updated_in_place_is_updated_out_of_place_and_the_callers_change_is_said(signatures):
    fix = only_fix(signatures, "AddPositions")
    assert fix.proven, fix.why_not()
    assert [e.new_text for e in fix.edits] == ["x = x + self.positions"]
    assert fix.proof.inputs_changed == ["x"]
    assert (
        fix.label()
        == "Update out of place — fx failures 1 → 0, outputs equal on 3 inputs, the caller's `x` no longer changed"
    )
    assert "no longer changed by the call" in fix.what
    method = only_fix(signatures, "InputScaler")
    assert method.proven and [e.new_text for e in method.edits] == ["x = x.mul(self.gain)"]
    # torch itself: the same outputs, and the caller's tensor is what changed (the original adds in place)
    original, fixed = _pair(SIGNATURES, fix, "AddPositions")
    x = torch.randn(6, 16)
    given, kept = x.clone(), x.clone()
    with torch.no_grad():
        assert torch.equal(fixed(kept), original(given))
    assert torch.equal(kept, x) and not torch.equal(given, x)
    graph = torch.fx.symbolic_trace(fixed)
    assert not any(n.target is torch.Tensor.add_ or "iadd" in str(n.target) for n in graph.graph.nodes)


def test_an_intermediate_updated_in_place_changes_nothing_the_caller_sees(signatures):
    fix = only_fix(signatures, "ActivatedAdapter")
    assert fix.proven and [e.new_text for e in fix.edits] == ["h = h.relu()"] and fix.proof.inputs_changed == []
    assert "caller" not in fix.label()


def test_no_fix_where_a_caller_in_the_file_reads_the_tensor_its_layer_updated(signatures):
    fix = only_fix(signatures, "ShiftInPlace")
    assert not fix.proven and fix.edits == []
    assert "ShiftedReadout.forward" in fix.why_not() and "reads `x` after calling it" in fix.why_not()
    # the parent runs the child's line too: its finding there says where the fix, or why none, is
    [there] = signatures.find_class("ShiftedReadout").fixes
    assert not there.proven and there.edits == []
    assert (
        there.why_not() == "the line is `ShiftInPlace`'s code, run by `ShiftedReadout`: the fix, or why none, is there"
    )


def test_an_update_through_a_view_of_the_input_fails_the_proof(signatures):
    """`head = x[:, :4]; head.mul_(0.5)` changes x, which forward reads next: out of place, it does not."""
    fix = only_fix(signatures, "PrefixNorm")
    assert not fix.proven and [e.new_text for e in fix.edits] == ["head = head.mul(0.5)"]
    assert fix.why_not().startswith("outputs differ on input 1 (eval)")


def test_a_mutable_default_becomes_none_and_fx_traces_the_default(signatures):
    fix = only_fix(signatures, "ExtraFeatures")
    assert fix.proven, fix.why_not()
    assert [e.new_text for e in fix.edits] == ["None", "if extras is None:\n            extras = []\n        "]
    original, fixed = _pair(SIGNATURES, fix, "ExtraFeatures")
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(original)
    graph = torch.fx.symbolic_trace(fixed, concrete_args={"extras": None})
    x = torch.randn(3, 16)
    assert torch.equal(graph(x), original(x))
    extra = torch.randn(3, 16)
    assert torch.equal(fixed(x, [extra]), original(x, [extra]))  # a caller that passes extras: as before
    assert only_fix(signatures, "KeyedBias").proven


def test_a_default_forward_appends_to_gets_no_fix(signatures):
    fix = only_fix(signatures, "MemoisedProjection")
    assert not fix.proven and fix.edits == []
    assert "`history.append(...)`" in fix.why_not() and "between calls" in fix.why_not()


def test_numpy_and_list_round_trips_keep_the_tensor(bridges):
    numpy_fix, list_fix = only_fix(bridges, "NumpyClipNorm"), only_fix(bridges, "ListRowWeights")
    typed, read_back = only_fix(bridges, "TypedRoundTrip"), only_fix(bridges, "ListTemperature")
    assert numpy_fix.proven and list_fix.proven and typed.proven, (numpy_fix.why_not(), list_fix.why_not())
    assert read_back.proven and [e.new_text for e in read_back.edits] == [
        "self.temperature(x).detach().squeeze(-1).detach().clone()"
    ]
    assert [e.new_text for e in numpy_fix.edits] == ["h.detach()"]
    assert [e.new_text for e in list_fix.edits] == ["h.sum(-1).detach().clone()"]
    assert [e.new_text for e in typed.edits] == ["h.detach().mean(0).to(dtype=torch.float32)"]
    for fix, name in ((numpy_fix, "NumpyClipNorm"), (list_fix, "ListRowWeights"), (typed, "TypedRoundTrip")):
        original, fixed = _pair(BRIDGES, fix, name)
        graph = torch.fx.symbolic_trace(fixed)
        for seed in (5, 6):
            x = torch.randn(4, 24, generator=torch.Generator().manual_seed(seed))
            with torch.no_grad():
                torch.testing.assert_close(graph(x), original(x), rtol=1e-5, atol=1e-6)


def test_a_numpy_percentile_of_the_value_becomes_torch_quantile(bridges):
    """Before torch.quantile, fx still failed inside NumPy once the value was kept a tensor."""
    fix = only_fix(bridges, "PercentileClip")
    assert fix.proven and fix.rule == "numpy-op", fix.why_not()
    assert [(e.old_text, e.new_text) for e in fix.edits] == [
        ("float(np.percentile(h.detach().numpy(), 95))", "torch.quantile(h.detach(), 0.95)")
    ]
    original, fixed = _pair(BRIDGES, fix, "PercentileClip")
    with pytest.raises(ValueError, match="invalid __array_struct__"):
        torch.fx.symbolic_trace(original)
    graph = torch.fx.symbolic_trace(fixed)
    for seed in (7, 8):
        x = torch.randn(4, 24, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            torch.testing.assert_close(graph(10 * x), original(10 * x), rtol=1e-5, atol=1e-6)


def test_sum_of_a_tensor_becomes_its_sum_over_the_first_dimension(bridges):
    fix = only_fix(bridges, "SummedHeads")
    assert fix.proven, fix.why_not()
    assert [e.new_text for e in fix.edits] == ["per_head.sum(0)"]
    original, fixed = _pair(BRIDGES, fix, "SummedHeads")
    x = torch.randn(3, 24)
    with torch.no_grad():
        torch.testing.assert_close(torch.fx.symbolic_trace(fixed)(x), original(x), rtol=1e-5, atol=1e-6)
    assert only_fix(bridges, "SummedScores").proven


def test_range_of_a_tensors_value_gets_no_fix_and_says_why(bridges):
    fix = only_fix(bridges, "DataDependentRepeats")
    assert not fix.proven and fix.edits == []
    assert "`range` of a tensor's value" in fix.why_not()

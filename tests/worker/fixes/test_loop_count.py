"""A loop count made of a tensor's condition (blocks.py's StepDecay: `steps = int(h.abs().sum() > 10.0) + 1`, then
`for _ in range(steps):`) → the loop's fixed runs, and its one data-dependent run kept by torch.where; proven with
inputs that run the loop both numbers of times, and checked in torch itself on inputs of both counts. A loop whose
body reads its variable, or a count used elsewhere, gets no fix and says why."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.fx
from fix_support import load_text, only_class, report_with_fixes
from fxlens.fix_report import apply_edits
from fxlens.report import FileReport

BLOCKS = Path(__file__).resolve().parents[2] / "fixtures" / "fixes" / "blocks.py"
DECLINED = """

class IndexedDecay(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        steps = int(h.abs().sum() > 10.0) + 1
        for i in range(steps):
            h = h * (0.9 + 0.01 * i)
        return h


class CountedDecay(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        steps = int(h.abs().sum() > 10.0) + 1
        for _ in range(steps):
            h = h * 0.9
        return h / steps
"""


@pytest.fixture(scope="module")
def report() -> tuple[str, FileReport]:
    text = only_class(BLOCKS.read_text(), "StepDecay") + DECLINED
    return text, report_with_fixes(BLOCKS, ("fx", "aten"), text)


def _runs(module: torch.nn.Module, x: torch.Tensor) -> int:
    """How many times StepDecay's loop runs on `x`, from its own condition."""
    return int(module.fc(x).abs().sum() > 10.0) + 1


def test_the_last_run_of_a_loop_counted_by_a_condition_is_selected_by_torch_where(report):
    text, found = report
    [fix] = found.find_class("StepDecay").fixes
    assert fix.proven and fix.rule == "loop-count", fix.why_not()
    assert [e.new_text for e in fix.edits] == [
        "one_more = h.abs().sum() > 10.0",
        "h = h * 0.9\n        h = torch.where(one_more, h * 0.9, h)",
    ]
    assert [(c.level, c.before, c.after) for c in fix.proof.levels] == [("fx", 1, 0), ("aten", 1, 0)]
    assert fix.proof.unvaried == [] and fix.proof.inputs == 4  # a variant ran the loop the other number of times
    original = load_text("step_original", text).StepDecay()
    fixed = load_text("step_fixed", apply_edits(text, fix.edits)).StepDecay()
    fixed.load_state_dict(original.state_dict())
    with pytest.raises(TypeError, match="int\\(\\) argument"):
        torch.fx.symbolic_trace(original)
    graph = torch.fx.symbolic_trace(fixed)
    x = torch.randn(2, 32, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert {_runs(original, x), _runs(original, x * 1e-3)} == {1, 2}  # both counts below
        for inputs in (x, x * 1e-3, -x):
            assert torch.equal(graph(inputs), original(inputs))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("IndexedDecay", "the body reads the loop variable `i`"),
        ("CountedDecay", "the count `steps` is used beyond the loop's `range(steps)`"),
    ],
)
def test_a_loop_count_the_rewrite_cannot_keep_says_why(report, name, why):
    [fix] = report[1].find_class(name).fixes
    assert not fix.proven and fix.edits == [] and why in fix.why_not()

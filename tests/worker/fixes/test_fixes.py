"""Fixes that prove themselves, through the worker as the editor and the CLI get them: each rewrite's edit,
its proof (the finding gone at its level, outputs equal on three inputs), and the applied text compared with
what torch itself does with the original and the fixed module. A rewrite that changes results or module state
fails its proof, and is not offered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import torch.fx
from fix_support import fx_fixes_in_process, if_replaced, load_text, report_with_fixes
from fxlens.engine.fixes import apply_fix, proven_fixes
from fxlens.fix_report import Fix, apply_edits
from fxlens.report import FileReport
from fxlens.worker.fixes import find
from fxlens.worker.fixes.sites import Site

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
GATES = FIXTURES / "gates.py"
CHATTY = FIXTURES / "chatty.py"


@pytest.fixture(scope="module")
def gates() -> FileReport:
    return report_with_fixes(GATES, ("fx",))


def _fix(report: FileReport, class_name: str) -> Fix:
    return next(f for f in report.find_class(class_name).fixes)


def test_a_tensor_if_becomes_torch_where_and_traces_with_the_same_outputs(gates):
    fix = _fix(gates, "ResidualGate")
    assert fix.proven, fix.why_not()
    assert [e.new_text for e in fix.edits] == ["out = torch.where(h.mean() > 0, x + h, x - 0.5 * h)"]
    assert fix.label() == "Replace with torch.where — fx failures 1 → 0, outputs equal on 3 inputs"
    # what torch itself makes of the original and the fixed file
    text = GATES.read_text()
    original = load_text("gates_original", text).ResidualGate()
    fixed_cls = load_text("gates_fixed", apply_fix(text, fix)).ResidualGate
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(original)
    fixed = fixed_cls()
    fixed.load_state_dict(original.state_dict())
    graph = torch.fx.symbolic_trace(fixed)
    for seed in (3, 4, 5):
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(graph(x), original(x))
        assert torch.equal(graph(-x), original(-x))  # both outcomes of the branch


def test_builtin_max_against_a_number_becomes_clamp(gates):
    fix = _fix(gates, "FloorScale")
    assert fix.proven, fix.why_not()
    assert [e.new_text for e in fix.edits] == ["torch.clamp(h.norm(), min=1e-3)"]
    assert fix.proof.inputs == 3 and fix.proof.outputs == "equal" and fix.proof.state_equal


def test_a_branch_that_changes_module_state_gets_no_fix_and_says_why(gates):
    fix = _fix(gates, "CountingGate")
    assert not fix.proven and fix.edits == []
    assert "module state" in fix.why_not() and "self.opened" in fix.why_not()
    assert fix not in proven_fixes(gates)


def test_print_and_item_breaks_are_fixed_at_the_dynamo_level():
    report = report_with_fixes(CHATTY, ("dynamo",))
    fixes = {f.rule: f for f in report.find_class("ChattyProjection").fixes}
    guard, item = fixes["skip-while-compiling"], fixes["keep-tensor"]
    assert guard.proven and item.proven, (guard.why_not(), item.why_not())
    assert guard.proof.levels[0].what == "graph breaks" and guard.proof.levels[0].after < guard.proof.levels[0].before
    assert guard.edits[0].new_text == (
        'if not torch.compiler.is_compiling():\n            print("projected", tuple(h.shape))'
    )
    assert item.edits[0].old_text == "h.abs().amax().item()" and item.edits[0].new_text == "h.abs().amax()"
    # both applied: torch.compile's own count of breaks falls to none
    text = apply_edits(CHATTY.read_text(), [*guard.edits, *item.edits])
    fixed = load_text("chatty_fixed", text).ChattyProjection()
    explained = torch._dynamo.explain(fixed)(torch.randn(2, 16))
    assert explained.graph_break_count == 0


def test_a_rewrite_that_changes_results_fails_its_proof(monkeypatch, tmp_path):
    """The branches swapped: the trace succeeds, but the outputs differ, so nothing is offered."""

    def swapped(site: Site, found: ast.If) -> str:
        body, orelse = found.body[0].value, found.orelse[0].value
        return f"out = torch.where({site.segment(found.test)}, {site.segment(orelse)}, {site.segment(body)})"

    monkeypatch.setattr(find, "TABLE", (if_replaced("swapped", swapped),))
    path = tmp_path / "gates.py"
    path.write_text(GATES.read_text())
    fix = next(f for f in fx_fixes_in_process(path) if f.class_name == "ResidualGate")
    assert not fix.proven
    assert fix.proof.levels[0].after == 0  # the finding is gone at fx ...
    assert fix.why_not().startswith("outputs differ on input 1 (eval)")  # ... but the outputs are not kept


def test_a_rewrite_that_drops_a_state_change_fails_its_proof(monkeypatch, tmp_path):
    """The counting branch dropped: the outputs are equal, the module's buffer after the call is not."""

    monkeypatch.setattr(find, "TABLE", (if_replaced("dropped", lambda site, found: "pass"),))
    path = tmp_path / "gates.py"
    path.write_text(GATES.read_text())
    fix = next(f for f in fx_fixes_in_process(path) if f.class_name == "CountingGate")
    assert not fix.proven
    assert fix.why_not().startswith("module state differs after input") and "opened" in fix.why_not()

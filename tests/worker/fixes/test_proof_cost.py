"""What a proof saves does not cost it a check: its module calls run on one torch thread (the caller's thread count
is back afterwards), and at fx alone its re-trace propagates no shapes, yet still sees a finding the rewrite makes."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from fix_support import fx_fixes_in_process, if_replaced
from fxlens.fix_report import Fix
from fxlens.worker.fixes import find, outputs
from fxlens.worker.fixes.sites import Site

GATES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes" / "gates.py"


def _residual_gate(path: Path) -> Fix:
    return fx_fixes_in_process(path, ["ResidualGate"])[0]


def test_the_proof_calls_forward_on_one_thread_and_gives_the_thread_count_back(monkeypatch, tmp_path):
    threads_seen: list[int] = []
    call = outputs._call

    def counted(*args, **kwargs):
        threads_seen.append(torch.get_num_threads())
        return call(*args, **kwargs)

    monkeypatch.setattr(outputs, "_call", counted)
    path = tmp_path / "gates.py"
    path.write_text(GATES.read_text())
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fix = _residual_gate(path)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert fix.proven, fix.why_not()
    # both modules on three inputs in eval, and the original's runs that choose the modes and the inputs
    assert len(threads_seen) >= 6 and set(threads_seen) == {1}


def test_a_rewrite_that_adds_an_in_place_update_fails_its_proof_at_fx(monkeypatch, tmp_path):
    """The `if` made a torch.where whose result is then updated in place: the outputs would be equal, but the
    fx level's re-trace (no shapes propagated) reports the in-place update, so nothing is offered."""

    def in_place(site: Site, found: ast.If) -> str:
        body, orelse = found.body[0].value, found.orelse[0].value
        return f"out = torch.where({site.segment(found.test)}, {site.segment(body)}, {site.segment(orelse)}).add_(0)"

    monkeypatch.setattr(find, "TABLE", (if_replaced("in-place", in_place),))
    path = tmp_path / "gates.py"
    path.write_text(GATES.read_text())
    fix = _residual_gate(path)
    assert not fix.proven
    assert fix.why_not().startswith("the fx level still reports at the fixed line"), fix.why_not()
    assert "add_" in fix.why_not()

"""torch.fx's limitations that hurt passes, as fx-level diagnostics on a package-style module, each compared
with what torch's own symbolic_trace graph of the same module contains."""

from __future__ import annotations

import asyncio
import operator
import sys
from pathlib import Path

import pytest
import torch
from fxlens.engine.worker_client import TraceOptions, WorkerClient

PACKAGE = Path(__file__).resolve().parents[2] / "fixtures" / "packages" / "limits_pkg"
BLOCKS = PACKAGE / "limits_pkg" / "blocks.py"


@pytest.fixture(scope="module")
def report():
    async def go():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(
                str(BLOCKS), BLOCKS.read_text(), TraceOptions(levels=("fx",)), roots=[str(PACKAGE)]
            )
        finally:
            await client.stop()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def blocks():
    sys.path.insert(0, str(PACKAGE))
    try:
        import limits_pkg.blocks as module

        return module
    finally:
        sys.path.remove(str(PACKAGE))


def _at(text: str) -> tuple[int, int]:
    for number, line in enumerate(BLOCKS.read_text().splitlines(), 1):
        if text in line:
            return number, len(line[: line.index(text)].encode())
    raise AssertionError(text)


def _found(report, name, category):
    return {(d.line, d.col): d for d in report.find_class(name).levels["fx"].diagnostics if d.category == category}


def test_in_place_updates_are_warnings_at_their_expression_with_the_functional_form(report, blocks):
    graph = torch.fx.symbolic_trace(blocks.Residual(4)).graph
    methods = [n.target for n in graph.nodes if n.op == "call_method"]
    assert "mul_" in methods and "zero_" in methods  # torch records the in-place calls as they are
    assert any(n.target is operator.add for n in graph.nodes)  # `h += x` is recorded as a new value
    found = _found(report, "Residual", "in-place")
    mul = found[_at("h.mul_(0.5)")]
    assert mul.severity == "warning" and mul.level == "fx" and mul.fix == "Use the functional form: `h = h.mul(0.5)`"
    assert mul.end_col == mul.col + len("h.mul_(0.5)")
    augmented = found[_at("h += x")]
    assert "`h = h + x`" in augmented.fix and "in place" in augmented.explanation
    relu = found[_at("F.relu(h, inplace=True)")]
    assert "inplace=False" in relu.fix
    [view] = _found(report, "Residual", "write-through-view").values()
    assert (view.line, view.col) == _at("h[:, 0].zero_()") and view.severity == "warning"


def test_an_assignment_through_a_view_is_the_error_fx_raises_with_a_fix(report, blocks):
    with pytest.raises(TypeError, match="does not support item assignment"):
        torch.fx.symbolic_trace(blocks.Masked(4))
    [error] = _found(report, "Masked", "write-through-view").values()
    assert error.severity == "error" and error.line == _at("h[:, 0] = 0")[0] and "index_fill" in error.fix


def test_values_tracing_froze_are_information_with_concrete_args_and_wrap(report, blocks):
    graph = torch.fx.symbolic_trace(blocks.Gate(4), concrete_args={"use_gate": False}).graph
    constants = [n.target for n in graph.nodes if n.op == "get_attr" and n.target.startswith("_tensor_constant")]
    assert constants == ["_tensor_constant0"] and not any(n.target is torch.sigmoid for n in graph.nodes)
    [argument] = _found(report, "Gate", "frozen-argument").values()
    line, col = _at("use_gate:")
    assert (argument.line, argument.col, argument.severity) == (line, col, "information")
    assert "use_gate=False" in argument.message and "concrete_args" in argument.fix and "torch.fx.wrap" in argument.fix
    [tensor] = _found(report, "Gate", "frozen-tensor").values()
    assert "`_tensor_constant0` (shape (4,))" in tensor.message and "register_buffer" in tensor.fix


def test_clean_code_gets_none(report):
    # the Linear of every block is a plain call_module: nothing but the constructs above is flagged
    categories = {d.category for c in report.classes for d in c.levels["fx"].diagnostics}
    assert categories <= {"in-place", "write-through-view", "frozen-argument", "frozen-tensor", "guessed"}

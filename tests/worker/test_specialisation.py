"""Where the aten graph depends on an example size, a hint at that line says so, and for which size."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxlens.engine.worker_client import TraceOptions, WorkerClient

PATH = Path(__file__).resolve().parents[1] / "fixtures" / "failures_real" / "specialised.py"
LINES = PATH.read_text().splitlines()


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(LINES, 1) if needle in text)


@pytest.fixture(scope="module")
def report():
    async def analyse():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(PATH), PATH.read_text(), TraceOptions(levels=("aten",)))
        finally:
            await client.stop()

    return asyncio.run(analyse())


def _hint(report, class_name):
    result = report.find_class(class_name).levels["aten"]
    assert result.ok
    hints = [d for d in result.diagnostics if d.category == "specialised"]
    assert all(d.severity == "hint" and d.level == "aten" for d in hints)
    return hints


def test_a_loop_over_the_batch_says_it_unrolls_for_the_example_batch(report):
    (hint,) = _hint(report, "LoopOverBatch")
    assert hint.line == _line("for i in range(x.size(0))")
    assert "specialised to x.shape[0] == 2" in hint.message and "unrolls 2 times" in hint.message
    # the graph itself is the example's: two iterations
    nodes = report.find_class("LoopOverBatch").levels["aten"].nodes
    assert sum(n.target == "aten.mul.Tensor" for n in nodes) == 2


def test_an_assert_on_a_length_says_the_size_it_holds_for(report):
    (hint,) = _hint(report, "AssertsLength")
    assert hint.line == _line("assert x.shape[1] == 8")
    assert "specialised to x.shape[1] == 8" in hint.message and "with x.shape[1] == 24 this assert fails" in hint.message


def test_an_if_on_the_batch_is_said_to_be_decided_for_it(report):
    (hint,) = _hint(report, "BatchBranch")
    assert hint.line == _line("if x.shape[0] > 3")
    assert "specialised to x.shape[0] == 2" in hint.message and "`if`" in hint.message


def test_a_hard_coded_batch_says_which_line_fails_for_others(report):
    (hint,) = _hint(report, "FixedBatch")
    assert hint.line == _line(".view(2, 8)")
    assert "with x.shape[0] == 4 this line raises (RuntimeError: shape '[2, 8]' is invalid" in hint.message


def test_a_graph_that_does_not_depend_on_sizes_has_no_hint(report):
    assert _hint(report, "Plain") == []
    assert report.find_class("Plain").levels["aten"].note == ""

"""Where the aten graph depends on an example size, a hint at that line says so, and for which size."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_reference import analyse

PATH = Path(__file__).resolve().parents[2] / "fixtures" / "failures_real" / "specialised.py"
LINES = PATH.read_text().splitlines()


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(LINES, 1) if needle in text)


@pytest.fixture(scope="module")
def report():
    return analyse([PATH], levels=("aten",))[PATH.stem]


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
    assert (
        "specialised to x.shape[1] == 8" in hint.message and "with x.shape[1] == 24 this assert fails" in hint.message
    )


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


# `fxlens check` asks as surface "check": it shows no shape, so the worker exports scaled sizes only where an
# eager run on meta tensors at both sizes calls other ops (levels/size_probe.py). Its hints are the editor's.
@pytest.fixture(scope="module")
def check_report():
    return analyse([PATH], levels=("aten",), surface="check")[PATH.stem]


@pytest.mark.parametrize("name", ["LoopOverBatch", "AssertsLength", "Plain", "BatchBranch", "FixedBatch"])
def test_a_check_finds_the_hints_the_editor_shows(report, check_report, name):
    seen = [(d.line, d.col, d.end_line, d.end_col, d.message) for d in _hint(report, name)]
    assert [(d.line, d.col, d.end_line, d.end_col, d.message) for d in _hint(check_report, name)] == seen


def test_the_editor_names_the_batch_and_a_check_keeps_the_example_size(report, check_report):
    # the editor's shapes name B (from the scaled export); a check, which shows no shape, skips that export
    def shapes(r):
        return [n.shape for n in r.find_class("Plain").levels["aten"].nodes if n.op == "call_function"]

    assert all(shape[0] == "B" for shape in shapes(report))
    assert all(shape[0] == 2 for shape in shapes(check_report))


def test_the_hints_lines_come_from_the_one_grown_export(monkeypatch):
    """The loop's hint is at its line, and the aten level exported twice: the example, and the scaled inputs
    (whose nodes' stack traces map them to lines: no third export to find them)."""
    from fxlens.messages import ClassTraced, TraceRequest
    from fxlens.worker.analysis.analyse import Analysis
    from fxlens.worker.levels import aten, forked

    def in_this_process(self) -> None:  # the scaled export runs here, where it can be counted
        raise OSError("counted in this process")

    exports = []
    export = aten.export

    def counted(*args, **kwargs):
        exports.append(args[1])
        return export(*args, **kwargs)

    monkeypatch.setattr(forked.ForkedCall, "_fork", in_this_process)
    monkeypatch.setattr(aten, "export", counted)
    events = []
    request = TraceRequest(str(PATH), text=PATH.read_text(), levels=["aten"], classes=["LoopOverBatch"])
    Analysis(request).run(events.append)
    (aten_level,) = [
        e.report["levels"]["aten"]
        for e in events
        if isinstance(e, ClassTraced) and "aten" in e.report.get("levels", {})
    ]
    hints = [d for d in aten_level["diagnostics"] if d["category"] == "specialised"]
    assert [d["line"] for d in hints] == [_line("for i in range(x.size(0))")]
    example, scaled = [inputs[0].shape for inputs in exports]  # no third export
    assert scaled[0] == 2 * example[0]


def test_a_check_with_core_aten_finishes_with_the_same_hints(report):
    """A check holds no scaled program for core-aten (it names no size): every class's levels end, none waits
    on a forked process (a hang would end as a timeout diagnostic)."""
    checked = analyse([PATH], levels=("aten", "core-aten"), surface="check", timeout=40)[PATH.stem]
    assert not [d for d in checked.all_diagnostics() if d.category == "timeout"]
    assert checked.find_class("Plain").levels["core-aten"].ok
    for name in ("LoopOverBatch", "AssertsLength", "BatchBranch", "FixedBatch"):
        assert [d.message for d in _hint(checked, name)] == [d.message for d in _hint(report, name)]

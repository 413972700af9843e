"""A compile level that hangs or takes the trace process down costs that level of its class, never its other levels.

Code that runs only under torch.compile (tests/fixtures/hostile/compiled_only.py: a helper compiled code calls,
which segfaults or deadlocks) ends the trace process at the dynamo level, after the class's fx and aten levels were
traced. Through the real warm worker: the class keeps fx and aten (raw torch's own graphs), its dynamo level says it
was lost, why, and at which line, inductor (which compiles through dynamo) says so too, the class beside it compiles
as ever, and the same worker lives on with nothing left running.
"""

from __future__ import annotations

import pytest
from hostile_support import fixture_text
from torch_reference import expected, reported

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _marked(text: str, case: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if f"# HOSTILE {case}" in line)


@pytest.mark.parametrize(
    "flush, case, levels, timeout, words",
    [
        (
            "_clear_stats",
            "segfault",
            ("fx", "aten", "dynamo", "inductor"),
            120,
            "fxlens lost the dynamo level (and inductor, which compiles through it): the trace process crashed on this "
            "line with a segmentation fault (SIGSEGV)",
        ),
        (
            "_merge_stats",
            "deadlock",
            ("fx", "aten", "dynamo"),
            30,
            "fxlens lost the dynamo level: fxlens stopped the trace: it ran longer than 30 s; this line was still "
            "running",
        ),
    ],
)
async def test_a_compile_level_that_crashes_or_hangs_costs_only_that_level(
    worker, tmp_path, flush, case, levels, timeout, words
):
    text = fixture_text("compiled_only.py", FLUSH=flush)
    path = tmp_path / "compiled_only.py"
    path.write_text(text)
    pid = worker.pid
    report = await worker.analyse(path, text, levels=levels, cost=False, surface="check", timeout=timeout)

    assert report.diagnostics == []  # nothing at the file level: the file was traced
    flushing = report.find_class("Flushing")
    for level in ("fx", "aten"):  # the levels the code does not crash, as raw torch makes them
        assert flushing.levels[level].ok, flushing.levels[level]
        assert reported(flushing, level) == expected(path, report, flushing, level)
    dynamo = flushing.levels["dynamo"]
    assert not dynamo.ok and dynamo.nodes == []
    (lost,) = flushing.diagnostics()
    assert (lost.level, lost.line, lost.severity) == ("dynamo", _marked(text, case), "error")
    assert lost.message.startswith(words), lost.message
    assert lost.message.endswith("; the class's other levels were traced without it"), lost.message
    if "inductor" in levels:
        inductor = flushing.levels["inductor"]
        assert not inductor.ok and inductor.note == "not traced: it compiles through the dynamo level, lost"

    plain = report.find_class("Plain")  # compiled as ever
    assert all(plain.levels[level].ok for level in levels) and plain.diagnostics() == []

    assert worker.client.alive and worker.pid == pid
    assert worker.leftovers() == []

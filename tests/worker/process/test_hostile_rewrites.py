"""A fix whose rewrite hangs or takes the trace process down costs that fix, never its class (issue 42).

Before a proof, fxlens's rewrite reads the objects the finding's line names: is `events(...)` `print`, a Logger's
method, `warnings.warn`? Asking runs an object's own `__eq__`, whose bug (tests/fixtures/hostile/event_counter.py)
deadlocks or crashes in native code there and nowhere else. Through the real warm worker, each time: the class keeps
its levels (its fx graph is raw torch's own, its graph break at the call is said), the fix comes back not proven with
why in words, the class beside it still gets its proven fix, and the same worker lives on with nothing left running.
"""

from __future__ import annotations

import pytest
from hostile_support import fixture_text
from torch_reference import expected, reported

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEVELS = ("fx", "dynamo")


@pytest.mark.parametrize(
    "compare, words",
    [
        (
            "_locked_compare",
            "not proven: fxlens's rewrite of this line did not finish within 10 s, so fxlens stopped it: an object the "
            "line calls ran code of its own (its `__eq__` or `__getattr__`) that may loop forever or wait on a lock",
        ),
        (
            "_native_compare",
            "not proven: the trace process crashed while fxlens wrote this fix (reading an object the line calls) with "
            "a segmentation fault (SIGSEGV)",
        ),
    ],
)
async def test_a_rewrite_that_crashes_or_hangs_costs_only_its_fix(worker, tmp_path, monkeypatch, compare, words):
    (tmp_path / "event_counter.py").write_text(fixture_text("event_counter.py", COMPARE=compare))
    text = fixture_text("rewrite_reads_object.py")
    path = tmp_path / "rewrite_reads_object.py"
    path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))  # (for raw torch's own trace of the file, below)
    pid = worker.pid
    report = await worker.analyse(path, text, levels=LEVELS, fixes=True, cost=False, surface="check", timeout=90)

    assert report.diagnostics == []  # nothing at the file level: the file was traced
    reported_class = report.find_class("Reported")
    call = next(n for n, line in enumerate(text.splitlines(), 1) if 'events("projected")' in line)
    # its levels as traced: fx's graph is raw torch's, dynamo breaks its graph at the call
    assert [(d.level, d.category, d.line) for d in reported_class.diagnostics()] == [("dynamo", "graph-break", call)]
    assert reported_class.levels["fx"].ok
    assert reported(reported_class, "fx") == expected(path, report, reported_class, "fx")
    (fix,) = reported_class.fixes
    assert fix.rule == "skip-while-compiling" and not fix.edits and not fix.proven
    assert fix.why_not().startswith(words), fix.why_not()

    (gate_fix,) = report.find_class("Gate").fixes  # proven in the run that followed, as ever
    assert gate_fix.proven and gate_fix.rule == "torch-where", gate_fix.why_not()

    assert worker.client.alive and worker.pid == pid
    assert worker.leftovers() == []

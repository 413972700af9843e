"""A fix whose proof hangs or takes the trace process down costs that fix, never its class (issue 42).

The proof of a fix is the first run of a class on real memory (fxlens's levels run on meta and fake tensors and fx
proxies): code that only runs there (tests/fixtures/hostile/proof_fast_path.py) can segfault, call `os._exit`,
deadlock or raise SystemExit in the proof alone. Through the real warm worker, each time: the class keeps its levels
(its aten graph is raw torch's own), the fix comes back not proven with why and the line it was running, the class
beside it still gets its proven fix, and the same worker lives on with nothing left running.
"""

from __future__ import annotations

import pytest
from fxlens.engine.trace_options import Listeners, TraceAsk, TraceOptions
from hostile_support import fixture_text
from torch_reference import expected, reported

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEVELS = ("fx", "aten")


def _marked(text: str, case: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if f"# HOSTILE {case}" in line)


@pytest.mark.parametrize(
    "fast_path, case, words",
    [
        ("_zero_rows", "segfault", "the trace process crashed while it proved this fix with a segmentation fault"),
        ("_checked_rows", "exit", "ended the process while it proved this fix with exit status 3"),
        ("_cached_rows", "deadlock", "the proof of this fix did not finish within 30 s"),
        # what the code did, in its own words (raised, not fatal: a failed proof like any other)
        ("_validated_rows", "system-exit", "the code exits the program (sys.exit('expected a 3-dimensional batch'))"),
    ],
)
async def test_a_proof_that_crashes_or_hangs_costs_only_its_fix(worker, tmp_path, fast_path, case, words):
    text = fixture_text("proof_fast_path.py", FAST_PATH=fast_path)
    path = tmp_path / "proof_fast_path.py"
    path.write_text(text)
    pid = worker.pid
    report = await worker.analyse(path, text, levels=LEVELS, fixes=True, cost=False, surface="check", timeout=60)

    assert report.diagnostics == []  # nothing at the file level: the file was traced
    pool = report.find_class("MeanPool")
    # its levels as traced: fx's own failure at `len(x)`, and the aten graph raw torch exports
    assert [(d.level, d.category) for d in pool.diagnostics()] == [("fx", "builtin-on-proxy")]
    assert pool.levels["aten"].ok
    assert reported(pool, "aten") == expected(path, report, pool, "aten")
    (fix,) = pool.fixes
    assert fix.rule == "shape-not-len" and fix.edits and not fix.proven
    assert words in fix.why_not(), fix.why_not()
    assert f"(it was running line {_marked(text, case)}: `" in fix.why_not(), fix.why_not()

    (gate_fix,) = report.find_class("Gate").fixes  # proven in the run that followed, as ever
    assert gate_fix.proven and gate_fix.rule == "torch-where", gate_fix.why_not()
    assert report.find_class("Gate").levels["fx"].diagnostics[0].category == "data-dependent-control-flow"

    assert worker.client.alive and worker.pid == pid
    assert worker.leftovers() == []


async def test_a_proof_the_trace_s_own_time_limit_cuts_says_so(worker, tmp_path):
    # a limit the proof starts within (its likely cost is well under it) but that comes before the proof's own 30 s
    timeout = 8.0
    text = fixture_text("proof_fast_path.py", FAST_PATH="_cached_rows")
    path = tmp_path / "proof_fast_path.py"
    path.write_text(text)
    report = await worker.analyse(path, text, levels=LEVELS, fixes=True, cost=False, surface="check", timeout=timeout)
    pool = report.find_class("MeanPool")
    assert pool.levels["aten"].ok and [d.category for d in pool.diagnostics()] == ["builtin-on-proxy"]
    (fix,) = pool.fixes
    assert fix.why_not().startswith(
        "not proven: the proof of this fix was still running when the trace's time limit (8 s, fxlens.timeoutSeconds) "
        f"came (it was running line {_marked(text, 'deadlock')}: `"
    ), fix.why_not()
    assert report.find_class("Gate").fixes[0].proven
    assert worker.leftovers() == []


async def test_the_run_again_after_a_lost_proof_leaves_the_classes_it_reported_whole(worker, tmp_path):
    # Gate traced first (the cursor's class): its levels and its proven fix are out when MeanPool's proof crashes;
    # the run again that reports MeanPool's fix neither traces Gate nor proves its fix again (the server holds them)
    text = fixture_text("proof_fast_path.py", FAST_PATH="_zero_rows")
    path = tmp_path / "proof_fast_path.py"
    path.write_text(text)
    events: list[str] = []
    report = await worker.client.submit(
        str(path),
        text,
        TraceOptions(levels=LEVELS, fixes=True, cost=False, surface="check", timeout=60),
        TraceAsk(first="Gate"),
        Listeners(on_class=lambda cls: events.append(cls.name)),
    )
    assert events.count("Gate") == len(LEVELS) + 1  # a level at a time, then its fix: once
    gate = report.find_class("Gate")
    assert sorted(gate.levels) == sorted(LEVELS)  # its levels as the first run traced them
    assert gate.levels["fx"].diagnostics[0].category == "data-dependent-control-flow"
    (gate_fix,) = gate.fixes
    assert gate_fix.proven and gate_fix.rule == "torch-where", gate_fix.why_not()
    (pool_fix,) = report.find_class("MeanPool").fixes
    assert pool_fix.why_not().startswith("not proven: the trace process crashed while it proved this fix")
    assert events.count("MeanPool") > len(LEVELS) + 1  # (it was traced again: its fix's proof ended the first run)
    assert worker.leftovers() == []

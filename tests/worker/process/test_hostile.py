"""Hostile code through the real warm worker (issue 5, worker half).

Every case checks four things: a clear diagnostic at the right line (timeout / crash / exit /
memory / ...), the worker still answers, the next good text for the same path traces correctly,
and no process the trace started is left (see hostile_support for how they are found).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fxlens.report import FileReport
from hostile_support import TrackedWorker, assert_good_report, fixture_text, hostile_line, wait_for_file

pytestmark = pytest.mark.asyncio(loop_scope="module")

HANG_TIMEOUT = 3.0  # seconds; every hang case costs this much


async def expect_recovery(worker: TrackedWorker, path: Path, pid_before: int) -> None:
    """The same worker process answers, the good text at the same path is right, nothing is left."""
    assert worker.leftovers() == []
    assert worker.client.alive and worker.pid == pid_before
    assert_good_report(await worker.analyse(path, fixture_text("good.py")))
    assert worker.leftovers() == []


def only_error(report: FileReport):
    errors = [d for d in report.all_diagnostics() if d.severity == "error"]
    assert len(errors) == 1, errors
    return errors[0]


async def run_case(worker, tmp_path, name: str, **options):
    text = fixture_text(name)
    path = tmp_path / name
    pid = worker.pid
    report = await worker.analyse(path, text, **options)
    return report, hostile_line(text), path, pid


async def test_good_text_traces(worker, tmp_path):
    assert_good_report(await worker.analyse(tmp_path / "good.py", fixture_text("good.py")))


@pytest.mark.parametrize("name", ["loop_init.py", "loop_forward.py", "sleep_forward.py"])
async def test_hang_is_stopped_at_its_line(worker, tmp_path, name):
    report, line, path, pid = await run_case(worker, tmp_path, name, timeout=HANG_TIMEOUT)
    error = only_error(report)
    assert (error.category, error.line) == ("timeout", line), error
    assert "ran longer than 3 s" in error.message and "still running" in error.message
    assert "fxlens.timeoutSeconds" in error.fix
    await expect_recovery(worker, path, pid)


async def test_top_level_loop_is_not_run_in_safe_mode(worker, tmp_path):
    report, line, path, pid = await run_case(worker, tmp_path, "loop_toplevel.py", timeout=HANG_TIMEOUT)
    assert [d for d in report.all_diagnostics() if d.severity == "error"] == []
    hints = [d for d in report.diagnostics if d.category == "not-executed"]
    assert [(d.line, d.severity) for d in hints] == [(line, "hint")]
    assert "top-level loop" in hints[0].message
    assert report.find_class("Fine").levels["fx"].ok
    await expect_recovery(worker, path, pid)


async def test_top_level_loop_times_out_at_its_line_in_full_mode(worker, tmp_path):
    report, line, path, pid = await run_case(
        worker, tmp_path, "loop_toplevel.py", timeout=HANG_TIMEOUT, execution="full"
    )
    error = only_error(report)
    assert (error.category, error.line) == ("timeout", line), error
    await expect_recovery(worker, path, pid)


@pytest.mark.parametrize(
    "name, category, words",
    [
        ("segfault.py", "crash", "segmentation fault (SIGSEGV)"),
        ("os_exit.py", "exit", "exit status 3"),
        ("sys_exit.py", "exit", "sys.exit()"),
        ("raise_systemexit.py", "exit", "SystemExit: 2"),
        ("keyboard_interrupt.py", "interrupt", "KeyboardInterrupt"),
        ("self_kill.py", "exit", "killed its own process with SIGKILL"),
    ],
)
async def test_crash_or_exit_is_named_at_its_line(worker, tmp_path, name, category, words):
    report, line, path, pid = await run_case(worker, tmp_path, name)
    error = only_error(report)
    assert (error.category, error.line) == (category, line), error
    assert words in error.message
    assert error.fix
    await expect_recovery(worker, path, pid)


async def test_output_floods_do_not_touch_the_report(worker, tmp_path):
    report, _, path, pid = await run_case(worker, tmp_path, "output_flood.py")
    assert [d for d in report.all_diagnostics() if d.severity == "error"] == []
    noisy = report.find_class("Noisy")
    fx = noisy.levels["fx"]
    assert [(n.op, n.target, n.shape) for n in fx.nodes] == [
        ("placeholder", "x", [2, 4]),
        ("call_module", "fc", [2, 3]),
        ("call_function", "torch.relu", [2, 3]),
        ("output", "output", [2, 3]),
    ]
    assert noisy.levels["aten"].ok
    await expect_recovery(worker, path, pid)


@pytest.mark.parametrize("name", ["memory_toplevel.py", "memory_forward.py"])
async def test_allocating_too_much_is_a_memory_diagnostic(worker, tmp_path, name):
    report, line, path, pid = await run_case(worker, tmp_path, name)
    memory = [d for d in report.all_diagnostics() if d.category == "memory"]
    assert memory and {d.line for d in memory} == {line}, report.all_diagnostics()
    assert "memoryLimitMB" in memory[0].fix
    await expect_recovery(worker, path, pid)


async def test_memory_limit_is_a_request_option(worker, tmp_path):
    report, line, path, pid = await run_case(worker, tmp_path, "memory_configurable.py")
    assert report.find_class("Table").levels["fx"].ok, report.all_diagnostics()
    report, line, path, pid = await run_case(worker, tmp_path, "memory_configurable.py", memory_mb=256)
    error = only_error(report)
    assert (error.category, error.line) == ("memory", line), error
    await expect_recovery(worker, path, pid)


async def test_unbounded_recursion(worker, tmp_path):
    report, line, path, pid = await run_case(worker, tmp_path, "recursion.py")
    errors = [d for d in report.all_diagnostics() if d.severity == "error"]
    assert errors and {(d.category, d.line) for d in errors} == {("recursion", line)}, errors
    assert "RecursionError" in errors[0].message
    await expect_recovery(worker, path, pid)


async def test_spawned_processes_and_threads_do_not_survive(worker, tmp_path):
    report, _, path, pid = await run_case(worker, tmp_path, "spawn.py")
    assert report.find_class("Spawner").levels["fx"].ok, report.all_diagnostics()
    await expect_recovery(worker, path, pid)  # includes: no process left with the worker's token


async def test_monkeypatching_torch_and_builtins_does_not_leak(worker, tmp_path):
    # its top level replaces `len` (fxlens's own code and the standard library use it), a constructor replaces
    # `len` and `sorted` again: both classes still trace
    report, _, path, pid = await run_case(worker, tmp_path, "monkeypatch.py")
    for name in ("Patched", "PatchesWhenBuilt"):
        assert report.find_class(name).levels["fx"].ok, report.all_diagnostics()
    await expect_recovery(worker, path, pid)  # the good report needs the real relu, Linear, `+` and len


async def test_import_error_is_at_the_import(worker, tmp_path):
    report, line, path, pid = await run_case(worker, tmp_path, "import_error.py")
    error = only_error(report)
    assert error.line == line and "No module named 'fxlens_no_such_package_anywhere'" in error.message
    await expect_recovery(worker, path, pid)


async def test_syntax_error_while_typing(worker, tmp_path):
    report, line, path, pid = await run_case(worker, tmp_path, "syntax_error.py")
    error = only_error(report)
    assert (error.category, error.line) == ("syntax", line), error
    await expect_recovery(worker, path, pid)


NON_UTF8 = (
    b'import torch.nn as nn\nLABEL = "caf\xe9"\n\n\n'
    b"class Latin(nn.Module):\n    def forward(self, x):\n        return x\n"
)


async def test_non_utf8_bytes_decoded_with_replacement_still_trace(worker, tmp_path):
    # what the CLI does with undecodable bytes (errors="replace"); editors send valid text too
    path = tmp_path / "latin.py"
    report = await worker.analyse(path, NON_UTF8.decode("utf-8", errors="replace"))
    assert report.find_class("Latin").levels["fx"].ok, report.all_diagnostics()
    await expect_recovery(worker, path, worker.pid)


async def test_non_utf8_bytes_carried_as_surrogates_are_a_syntax_error_at_their_line(worker, tmp_path):
    path = tmp_path / "latin.py"
    report = await worker.analyse(path, NON_UTF8.decode("utf-8", errors="surrogateescape"))
    error = only_error(report)
    assert (error.category, error.line) == ("syntax", 2) and "not UTF-8" in error.message, error
    await expect_recovery(worker, path, worker.pid)


@pytest.mark.parametrize("text", [fixture_text("not_python.txt"), "\x00\x01\x02PNG\x00 binary", "}{"])
async def test_a_file_that_is_not_python(worker, tmp_path, text):
    path = tmp_path / "notes.py"
    error = only_error(await worker.analyse(path, text))
    assert error.category == "syntax" and error.line >= 1
    await expect_recovery(worker, path, worker.pid)


async def test_empty_file(worker, tmp_path):
    path = tmp_path / "empty.py"
    report = await worker.analyse(path, "")
    assert report.classes == [] and report.all_diagnostics() == []
    await expect_recovery(worker, path, worker.pid)


def _big_file(classes: int, lines_per_class: int, statements: int) -> str:
    """Module classes padded with comments, as real files are (fewer nodes keep the test quick)."""
    out = ["import torch", "import torch.nn as nn", ""]
    for index in range(classes):
        out += [
            "",
            f"# fxlens: Layer{index}()(torch.randn(2, 4))",
            f"class Layer{index}(nn.Module):",
            "    def forward(self, x):",
        ]
        out += [f"        # step {k} of the computation" for k in range(lines_per_class - 5 - statements)]
        out += [f"        x = x + {k}" for k in range(statements)]
        out += ["        return x"]
    return "\n".join(out) + "\n"


async def test_ten_thousand_lines_with_a_hundred_module_classes(worker, tmp_path):
    text = _big_file(100, 100, statements=10)
    assert len(text.splitlines()) >= 10_000
    path = tmp_path / "big.py"
    report = await worker.analyse(path, text, levels=("fx",))
    assert sorted(c.name for c in report.classes) == sorted(f"Layer{i}" for i in range(100))
    for cls in report.classes:
        fx = cls.levels["fx"]
        assert fx.ok and len(fx.nodes) == 2 + 10, (cls.name, fx.diagnostics)
    last = report.find_class("Layer99").levels["fx"].nodes[-2]
    assert last.line == len(text.splitlines()) - 1  # the last `x = x + 9`
    await expect_recovery(worker, path, worker.pid)


def _markers(tmp_path: Path) -> dict[str, str]:
    return {key: str(tmp_path / f"marker-{key.lower()}") for key in ("LOOP", "WITH", "CALL", "MAIN", "ASSIGN")}


async def test_safe_mode_runs_no_top_level_loop_with_or_call(worker, tmp_path):
    markers = _markers(tmp_path)
    text = fixture_text("side_effects.py", **markers)
    report = await worker.analyse(tmp_path / "side_effects.py", text)
    assert [m for m in markers.values() if Path(m).exists()] == []
    skipped = {d.line: d.message for d in report.diagnostics if d.category == "not-executed"}
    assert len(skipped) == 4 and all("did not run" in m for m in skipped.values())
    assert report.find_class("Model").levels["fx"].ok


async def test_full_mode_runs_them_but_never_the_main_block(worker, tmp_path):
    markers = _markers(tmp_path)
    text = fixture_text("side_effects.py", **markers)
    report = await worker.analyse(tmp_path / "side_effects.py", text, execution="full")
    assert sorted(k for k, m in markers.items() if Path(m).exists()) == ["CALL", "LOOP", "WITH"]
    assert report.find_class("Model").levels["fx"].ok


@pytest.mark.parametrize("execution", ["off", "bogus"])
async def test_execution_off_runs_nothing_and_lists_module_classes(worker, tmp_path, execution):
    markers = _markers(tmp_path)
    text = fixture_text("execution_off.py", **markers)
    report = await worker.analyse(tmp_path / "execution_off.py", text, execution=execution)
    if execution == "bogus":  # an unknown policy means `safe`: the assignment runs, nothing more
        assert Path(markers["ASSIGN"]).exists()
        assert {c.name for c in report.classes} == {"Block", "Deeper", "Bare"}
        return
    assert not Path(markers["ASSIGN"]).exists()
    assert [c.name for c in report.classes] == ["Block", "Deeper", "Bare"]  # not `Config`
    for cls in report.classes:
        (info,) = cls.diagnostics()
        assert (info.severity, info.category, info.line) == ("information", "execution-off", cls.line)
        assert not any(level.ok for level in cls.levels.values())


async def test_execution_off_with_a_syntax_error_says_so(worker, tmp_path):
    report = await worker.analyse(tmp_path / "typing.py", fixture_text("syntax_error.py"), execution="off")
    error = only_error(report)
    assert (error.category, error.line) == ("syntax", hostile_line(fixture_text("syntax_error.py")))


@pytest.mark.parametrize(
    "timeout, memory_mb", [(float("inf"), 10**300), (float("nan"), -5), ("soon", "lots"), (None, None), (1e300, 0)]
)
async def test_nonsense_options_fall_back_to_defaults(worker, tmp_path, timeout, memory_mb):
    # the server validates settings too; the worker must not die of whatever still gets through
    path = tmp_path / "good.py"
    assert_good_report(await worker.analyse(path, fixture_text("good.py"), timeout=timeout, memory_mb=memory_mb))
    assert worker.client.alive


async def test_garbage_on_the_report_pipe_and_cancels_do_not_kill_the_worker(worker, tmp_path):
    # the worker reads a flooded pipe while the cancel arrives, often in the same select() batch
    for attempt in range(5):
        started = tmp_path / f"started-{attempt}"
        text = fixture_text("channel_flood.py", STARTED=str(started))
        pending = asyncio.ensure_future(worker.analyse(tmp_path / "chatty.py", text, timeout=HANG_TIMEOUT))
        await asyncio.get_running_loop().run_in_executor(None, wait_for_file, started)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
    text = fixture_text("channel_flood.py", STARTED=str(tmp_path / "started-last"))
    path, pid, line = tmp_path / "chatty.py", worker.pid, hostile_line(text)
    report = await worker.analyse(path, text, timeout=HANG_TIMEOUT)
    error = only_error(report)  # the garbage `done` line is not the child's report: it times out
    assert (error.category, error.line) == ("timeout", line), error
    await expect_recovery(worker, path, pid)


async def test_a_trace_cannot_write_into_the_workers_channel(worker, tmp_path):
    """The child closes the worker's channel to the server and other traces' pipes before user code runs."""
    report, _, path, pid = await run_case(worker, tmp_path, "forge_channel.py")
    assert report.path == str(path)  # not the forged "done" the trace wrote to every descriptor
    forger = report.find_class("Forger")
    assert forger is not None and forger.levels["fx"].ok
    await expect_recovery(worker, path, pid)

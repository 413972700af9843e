"""Hostile code through the language server (issue 5, server half), with pytest-lsp.

Each case: the server answers requests, the document gets a diagnostic at the right line (or a
window/showMessage where no line fits), the next good edit recovers, and no process is left: the
server runs with a unique token in its environment, which its worker, the worker's trace children
and anything user code spawns inherit, so after each case only the server and its worker carry it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
import pytest_lsp
from hostile_support import TOKEN_VARIABLE, fixture_text, hostile_line, processes_of
from hostile_support import leftovers_besides as leftovers
from lsp_harness import ENV, HANG_GUARD, SERVER, Doc, command, make_client, start
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN = uuid.uuid4().hex
HANG_TIMEOUT = 5  # fxlens.timeoutSeconds for this module's server: hangs cost this much
SLOW_TIMEOUT = 60  # for a case that is slow but ends (it must not be cut by the hang timeout)
# for a case that hangs in its forward, reached at once (torch is already imported): no need to wait HANG_TIMEOUT
HANG_CASE_TIMEOUT = 2
GOOD = fixture_text("good.py")
GOOD_LENS = "fx 5"  # the start of the class's summary lens (`fx 5 · aten 4`)
# writes a marker when its trace has started, then hangs: only the first time, so a re-run succeeds
HANGS_ONCE = """import os
import time
import torch
import torch.nn as nn


# fxlens: Once()(torch.randn(2, 4))
class Once(nn.Module):
    def __init__(self):
        super().__init__()
        if not os.path.exists("{marker}"):
            open("{marker}", "w").close()
            time.sleep(3600)

    def forward(self, x):
        return x + 1
"""


def tracked(token: str = TOKEN, **env: str) -> ClientServerConfig:
    return ClientServerConfig(
        server_command=SERVER, client_factory=make_client, server_env={**ENV, TOKEN_VARIABLE: token, **env}
    )


def server_pid(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[union-attr]


async def stop(lsp: LanguageClient) -> None:
    """pytest-lsp's stop() waits for the server to exit: make sure it does, even when a test failed."""
    server = lsp._server  # type: ignore[attr-defined]
    if server is not None and server.returncode is None:
        server.kill()
    await lsp.stop()


def open_text(client: LanguageClient, path: Path, text: str) -> Doc:
    path.write_text(text)
    doc = Doc(client, path, text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=doc.version, text=text)
        )
    )
    return doc


def errors(doc: Doc) -> list[types.Diagnostic]:
    return [d for d in doc.diagnostics() if d.severity == types.DiagnosticSeverity.Error]


async def wait_for_file(path: Path) -> None:
    def wait() -> None:
        deadline = time.monotonic() + 60
        while not path.exists():
            assert time.monotonic() < deadline, f"{path} never appeared"
            time.sleep(0.02)

    await asyncio.get_running_loop().run_in_executor(None, wait)


@pytest_lsp.fixture(config=tracked(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"timeoutSeconds": HANG_TIMEOUT})
    yield
    await lsp_client.shutdown_session()


async def recovered(client: LanguageClient, doc: Doc, same_worker: bool = True) -> None:
    """The next good edit of the same document traces correctly, and nothing else is running."""
    worker = (await command(client, "fxlens.debugInfo"))["workerPid"]
    assert worker is not None
    await doc.traced(doc.change(GOOD))
    assert errors(doc) == []
    assert any(t.split(" · ")[0] == GOOD_LENS for t in [lens.command.title for lens in await doc.lenses()])
    hover = await doc.hover(doc.at(14, "torch.relu"))
    assert "torch.relu" in hover and "(2, 3)" in hover
    info = await command(client, "fxlens.debugInfo")
    assert info["workerPid"] == worker  # the hostile trace did not take the worker down
    assert leftovers(TOKEN, {server_pid(client), worker}) == []
    doc.close()


@pytest.mark.parametrize(
    "name, category",
    [
        ("loop_forward.py", "timeout"),
        ("sleep_forward.py", "timeout"),
        ("segfault.py", "crash"),
        ("os_exit.py", "exit"),
        ("sys_exit.py", "exit"),
        ("keyboard_interrupt.py", "interrupt"),
        ("memory_toplevel.py", "memory"),
        ("recursion.py", "recursion"),
        ("import_error.py", "load"),
        ("syntax_error.py", "syntax"),
    ],
)
async def test_hostile_code_gets_a_diagnostic_at_its_line(client: LanguageClient, tmp_path, name, category):
    text = fixture_text(name)
    # recursion: 1,000 calls deep through torch.export, seconds on a loaded machine, no hang
    timeout = {"recursion": SLOW_TIMEOUT, "timeout": HANG_CASE_TIMEOUT}.get(category)
    if timeout:
        await _configure(client, timeoutSeconds=timeout)
    try:
        doc = open_text(client, tmp_path / name, text)
        await doc.traced()
    finally:
        if timeout:
            await _configure(client)
    found = {(d.code, d.range.start.line) for d in errors(doc)}
    assert (category, hostile_line(text) - 1) in found, doc.diagnostics()
    await recovered(client, doc)


async def test_a_fix_whose_proof_crashes_is_not_offered_and_its_class_keeps_its_levels(
    client: LanguageClient, tmp_path
):
    """The proof of MeanPool's fix is the first run of its native fast path on real memory, and segfaults (issue 42):
    its finding says why the fix is not offered, and its hover still shows the aten graph its trace made."""
    text = fixture_text("proof_fast_path.py", FAST_PATH="_zero_rows")
    await _configure(client, timeoutSeconds=SLOW_TIMEOUT)  # (the proof is not started where the limit would cut it)
    try:
        doc = open_text(client, tmp_path / "proof_fast_path.py", text)
        await doc.traced()
    finally:
        await _configure(client)
    at_len = next(n for n, line in enumerate(text.splitlines(), 1) if "/ len(x)" in line)
    crashed = "`Use x.shape[0]` is not offered: not proven: the trace process crashed while it proved this fix"
    (finding,) = [d for d in errors(doc) if d.range.start.line == at_len - 1]
    assert finding.code == "builtin-on-proxy" and crashed in finding.message, finding.message
    assert "segmentation fault (SIGSEGV)" in finding.message
    assert [d.code for d in errors(doc) if d.code in ("crash", "timeout", "exit")] == []
    hover = await doc.hover(doc.at(at_len - 1, "self.proj"))
    assert hover is not None and "aten.linear.default" in hover, hover
    gate_if = next(n for n, line in enumerate(text.splitlines(), 1) if "if h.mean() > 0:" in line)
    assert any("fxlens can fix it (proven:" in d.message for d in errors(doc) if d.range.start.line == gate_if - 1)
    await recovered(client, doc)


@pytest.mark.parametrize(
    "name",
    [
        "output_flood.py",
        "spawn.py",
        "monkeypatch.py",
        "loop_toplevel.py",
    ],
)
async def test_noisy_or_sneaky_code_still_traces(client: LanguageClient, tmp_path, name):
    doc = open_text(client, tmp_path / name, fixture_text(name))
    await doc.traced()
    assert errors(doc) == []
    assert any(lens.command.title.startswith("fx ") for lens in await doc.lenses())
    await recovered(client, doc)


@pytest.mark.parametrize("text", ["", fixture_text("not_python.txt"), "\x00\x01 binary\x00"])
async def test_empty_or_not_python(client: LanguageClient, tmp_path, text):
    doc = open_text(client, tmp_path / "odd.py", text)
    await doc.traced()
    assert [d.code for d in errors(doc)] == ([] if text == "" else ["syntax"])
    await recovered(client, doc)


async def test_safe_mode_never_runs_top_level_side_effects(client: LanguageClient, tmp_path):
    markers = {key: str(tmp_path / key) for key in ("LOOP", "WITH", "CALL", "MAIN")}
    doc = open_text(client, tmp_path / "side_effects.py", fixture_text("side_effects.py", **markers))
    await doc.traced()
    assert [m for m in markers.values() if Path(m).exists()] == []
    hints = [d for d in doc.diagnostics() if d.code == "not-executed"]
    assert len(hints) == 4
    await recovered(client, doc)


async def test_killed_worker_is_restarted_and_the_trace_rerun(client: LanguageClient, tmp_path):
    marker = tmp_path / "started"
    doc = open_text(client, tmp_path / "once.py", HANGS_ONCE.format(marker=marker))
    await wait_for_file(marker)
    first = (await command(client, "fxlens.debugInfo"))["workerPid"]
    os.kill(first, signal.SIGKILL)
    await doc.traced()  # the rerun in the restarted worker finds the marker and does not hang
    assert errors(doc) == []
    assert any(lens.command.title.split(" · ")[0] == "fx 3" for lens in await doc.lenses())
    info = await command(client, "fxlens.debugInfo")
    assert info["workerPid"] not in (None, first)
    await recovered(client, doc)


async def test_a_killed_worker_leaves_nothing_its_trace_started(tmp_path):
    """The worker killed in the middle of a trace that started processes every way code does: the server
    (their subreaper once the worker is gone) ends them all, and the restarted worker traces the file."""
    token = uuid.uuid4().hex
    lsp, worker, doc = await _server_with_a_trace_in_flight(tmp_path, token)
    try:
        os.kill(worker, signal.SIGKILL)
        await doc.traced()  # the rerun in the restarted worker finds the marker and does not hang
        assert errors(doc) == []
        info = await command(lsp, "fxlens.debugInfo")
        assert info["workerPid"] not in (None, worker)
        assert leftovers(token, {server_pid(lsp), info["workerPid"]}) == []
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)


# -- servers of their own: shutdown, SIGKILL, interpreters that cannot run the worker -------------


async def _server_with_a_trace_in_flight(tmp_path: Path, token: str) -> tuple[LanguageClient, int, Doc]:
    """A server whose trace hangs after starting processes every way code does (spawn_then_hang.py)."""
    lsp = await tracked(token).start()
    await start(lsp)
    marker = tmp_path / "started"
    doc = open_text(lsp, tmp_path / "starter.py", fixture_text("spawn_then_hang.py", MARKER=str(marker)))
    await wait_for_file(marker)
    worker = (await command(lsp, "fxlens.debugInfo"))["workerPid"]
    # server, worker, the hanging trace child and the 7 processes it started
    assert worker and len(processes_of(token, None)) >= 10
    return lsp, worker, doc


async def _shut_down(lsp: LanguageClient) -> None:
    await lsp.shutdown_session()


async def _kill(lsp: LanguageClient) -> None:
    # the worker gets SIGKILL when the server dies, and the trace child when the worker does
    os.kill(server_pid(lsp), signal.SIGKILL)


async def _go_away(lsp: LanguageClient) -> None:
    lsp._server.stdin.close()  # type: ignore[union-attr]  # a crashed editor: its end of the pipe closes
    # no shutdown came first: the server ends with status 1, as the protocol asks of an exit without one
    assert await asyncio.wait_for(lsp._server.wait(), HANG_GUARD) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "leave",
    [_shut_down, _kill, _go_away],
    ids=["shutdown and exit", "SIGKILL of the server", "editor gone without shutdown"],
)
async def test_the_editor_leaving_leaves_nothing_running(tmp_path, leave):
    token = uuid.uuid4().hex
    lsp, _, _ = await _server_with_a_trace_in_flight(tmp_path, token)
    try:
        await leave(lsp)
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)


async def _configure(client: LanguageClient, **settings) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"timeoutSeconds": HANG_TIMEOUT, **settings}})
    )


async def test_memory_limit_is_a_setting(client: LanguageClient, tmp_path):
    text = fixture_text("memory_configurable.py")
    doc = open_text(client, tmp_path / "table.py", text)
    await doc.traced()
    assert errors(doc) == []  # 1 GB fits the default limit (4096 MB)
    await _configure(client, memoryLimitMB=256)
    try:
        await doc.traced(doc.change(text + "\n"))
        assert [(d.code, d.range.start.line) for d in errors(doc)] == [("memory", hostile_line(text) - 1)]
        assert "memoryLimitMB" in errors(doc)[0].message  # the fix names the setting
    finally:
        await _configure(client)
    await recovered(client, doc)


async def test_execution_off_runs_nothing_at_all(client: LanguageClient, tmp_path):
    markers = {key: str(tmp_path / key) for key in ("ASSIGN", "LOOP", "WITH", "CALL", "MAIN")}
    await _configure(client, execution="off")
    try:
        await client.fx.until(lambda: "execution is off" in (client.fx.statuses[-1]["message"] or ""), "off status")
        for name in ("execution_off.py", "side_effects.py", "loop_toplevel.py"):
            doc = open_text(client, tmp_path / name, fixture_text(name, **markers))
            result = await command(client, "fxlens.retrace", doc.uri)  # answered at once: nothing runs
            assert result["ok"] is False and errors(doc) == []
            doc.close()
        assert [m for m in markers.values() if Path(m).exists()] == []
    finally:
        await _configure(client)


async def test_a_file_that_forks_sleepers_leaves_none_in_a_busy_server(tmp_path):
    """The forking fixture (30 sleeping children, 15 in sessions of their own) in a server that has already
    traced other files, among other traces in flight and edits that cancel its own: when everything is traced,
    only the server and its worker (and its idle standby) are left."""
    token = uuid.uuid4().hex
    lsp = await tracked(token).start()
    try:
        await start(lsp)
        earlier = [open_text(lsp, tmp_path / f"earlier{i}.py", GOOD) for i in range(3)]
        for doc in earlier:
            await doc.traced()
        forker_text = fixture_text("fork_sleepers.py")
        forker = open_text(lsp, tmp_path / "forker.py", forker_text)
        busy = [open_text(lsp, tmp_path / f"busy{i}.py", GOOD) for i in range(3)]
        for doc in earlier:  # edits of the earlier files, traced beside it
            doc.change(GOOD + "\n")
        for extra in range(1, 4):  # typing in the forker: each edit supersedes the trace in flight
            forker.change(forker_text + "\n" * extra)
        for doc in [forker, *busy, *earlier]:
            await doc.traced()
        assert errors(forker) == [] and any(lens.command.title.startswith("fx ") for lens in await forker.lenses())
        worker = (await command(lsp, "fxlens.debugInfo"))["workerPid"]
        assert leftovers(token, {server_pid(lsp), worker}) == []
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)

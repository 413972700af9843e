"""Issue 17 through the language server (pytest-lsp): a trace that kills the worker, a class that
hangs beside a good one, an interpreter that prints a banner or cannot run the worker at all. Each case: the
server answers, the diagnostic or lens is at the right line, the next good edit is right, nothing else is left
running."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hostile_support import fixture_text, hostile_line
from hostile_support import leftovers_besides as leftovers
from lsp_harness import ENV, command, start
from lsprotocol import types
from test_hostile_server import GOOD, GOOD_LENS, errors, open_text, server_pid, stop, tracked

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def _server(token: str, **settings):
    lsp = await tracked(token).start()
    await start(lsp, {"timeoutSeconds": 5, **settings})
    return lsp


async def test_a_file_that_kills_the_worker_is_held_and_other_files_still_trace(tmp_path):
    token = uuid.uuid4().hex
    lsp = await _server(token)
    try:
        text = fixture_text("kill_parent_shell.py")
        bad = open_text(lsp, tmp_path / "bad.py", text)
        await bad.traced()
        (error,) = errors(bad)
        assert error.code == "crash" and "stopped tracing this file" in error.message
        good = open_text(lsp, tmp_path / "good.py", GOOD)
        await good.traced()
        assert errors(good) == [] and any(
            t.split(" · ")[0] == GOOD_LENS for t in [lens.command.title for lens in await good.lenses()]
        )
        info = await command(lsp, "fxlens.debugInfo")
        assert info["workerPid"] is not None  # restarted, not given up
        assert leftovers(token, {server_pid(lsp), info["workerPid"]}) == []
        await bad.traced(bad.change(GOOD))  # an edit tries the file again
        assert errors(bad) == []
        assert (await command(lsp, "fxlens.debugInfo"))["workerPid"] == info["workerPid"]
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)


async def test_a_class_that_hangs_gets_its_lens_and_the_good_class_beside_it_is_traced(tmp_path):
    token = uuid.uuid4().hex
    lsp = await _server(token)
    try:
        text = fixture_text("hang_beside_good.py")
        doc = open_text(lsp, tmp_path / "two.py", text)
        await doc.traced()
        line = hostile_line(text)
        assert [(d.code, d.range.start.line) for d in errors(doc)] == [("timeout", line - 1)]
        titles = [lens.command.title for lens in await doc.lenses()]
        assert any(t.startswith(f"fx timeout, line {line}") for t in titles), titles
        await doc.traced(doc.change(GOOD))
        assert errors(doc) == [] and any(
            t.split(" · ")[0] == GOOD_LENS for t in [lens.command.title for lens in await doc.lenses()]
        )
        worker = (await command(lsp, "fxlens.debugInfo"))["workerPid"]
        assert leftovers(token, {server_pid(lsp), worker}) == []
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)


def _script(path: Path, body: str) -> str:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("kind", ["banner then python", "banner only"])
async def test_an_interpreter_that_prints_a_banner(tmp_path, kind):
    tail = f'exec "{sys.executable}" "$@"\n' if kind == "banner then python" else "sleep 0.2\n"
    python = _script(tmp_path / "python-wrapper", f"#!/bin/sh\necho 'Welcome to the project environment'\n{tail}")
    token = uuid.uuid4().hex
    lsp = await _server(token, python=python)
    try:
        doc = open_text(lsp, tmp_path / "good.py", GOOD)
        result = await command(lsp, "fxlens.retrace", doc.uri)  # answered either way
        info = await command(lsp, "fxlens.debugInfo")
        if kind == "banner then python":
            assert result["ok"] is True and any(
                t.split(" · ")[0] == GOOD_LENS for t in [lens.command.title for lens in await doc.lenses()]
            )
            assert leftovers(token, {server_pid(lsp), info["workerPid"]}) == []  # exactly one worker
        else:
            assert result["ok"] is False and info["workerPid"] is None
            (message,) = [m for m in lsp.messages if m.type == types.MessageType.Error]
            assert "Welcome to the project environment" in message.message
            assert leftovers(token, {server_pid(lsp)}) == []  # no worker at all
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)


@pytest.fixture(scope="module")
def bad_interpreters(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    root = tmp_path_factory.mktemp("interpreters")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "bare")], check=True)
    fake = root / "old" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "1.13.0"\n')
    old_env = {"PYTHONPATH": os.pathsep.join([ENV["PYTHONPATH"], str(fake.parent)])}
    return {
        "missing": (str(root / "nowhere" / "python3"), {}),
        "no torch": (str(root / "bare" / "bin" / "python"), {}),
        "old torch": (sys.executable, old_env),
    }


@pytest.mark.parametrize(
    "kind, words, fix",
    [
        ("missing", "cannot run the interpreter", "fxlens.python"),
        ("no torch", "torch cannot be imported", "pip install torch"),
        ("old torch", "torch 1.13.0", "pip install -U torch"),
    ],
)
async def test_an_interpreter_that_cannot_run_the_worker(tmp_path, bad_interpreters, kind, words, fix):
    python, env = bad_interpreters[kind]
    token = uuid.uuid4().hex
    lsp = await tracked(token, **env).start()
    try:
        await start(lsp, {"python": python})
        await lsp.fx.until(
            lambda: [m for m in lsp.messages if m.type == types.MessageType.Error],
            "an error message about the interpreter",
        )
        doc = open_text(lsp, tmp_path / "good.py", GOOD)
        result = await command(lsp, "fxlens.retrace", doc.uri)  # answered, not hung
        assert result["ok"] is False
        assert await doc.hover(doc.at(14, "torch.relu")) is None
        (error,) = [m for m in lsp.messages if m.type == types.MessageType.Error]  # once: no storm
        assert words in error.message and fix in error.message
        info = await command(lsp, "fxlens.debugInfo")
        assert info["workerStarts"] == 1 and info["workerPid"] is None
        if kind == "missing":  # fixing the setting recovers without restarting the server (once is enough)
            lsp.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"fxlens": {"python": sys.executable}})
            )
            await doc.traced()
            assert any(t.split(" · ")[0] == GOOD_LENS for t in [lens.command.title for lens in await doc.lenses()])
        await lsp.shutdown_session()
        assert leftovers(token, set()) == []
    finally:
        await stop(lsp)

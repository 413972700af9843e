"""The server never imports torch; the supervisor restarts a dying worker with back-off, then gives up."""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from fxlens.engine.supervisor import Supervisor
from fxlens.engine.worker_client import WorkerUnavailable

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_server_does_not_import_torch():
    code = "import sys; import fxlens.lsp.server as s; s.build_server(); sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(ROOT / "server")}).returncode == 0


def fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


class States:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.error = asyncio.Event()
        self.ready = 0

    def on_state(self, state: str, message: str) -> None:
        self.seen.append((state, message))
        if state == "error":
            self.error.set()

    def on_ready(self) -> None:
        self.ready += 1


async def test_a_worker_that_keeps_dying_is_restarted_with_back_off_then_left_alone(tmp_path):
    python = fake_python(tmp_path, """echo '{"event": "ready", "pid": 1, "torch": "0"}'; exit 7""")
    states = States()
    supervisor = Supervisor(states.on_state, states.on_ready, backoff=(0.01, 0.02))
    supervisor.start(python)
    await asyncio.wait_for(states.error.wait(), 30)
    assert supervisor.starts == 3 and states.ready == 3
    assert [s for s, _ in states.seen].count("error") == 1
    assert "gave up" in states.seen[-1][1]
    assert any("restarting in 0.01 s" in m for _, m in states.seen)
    with pytest.raises(WorkerUnavailable):
        await supervisor.get()
    await supervisor.stop()


async def test_an_interpreter_without_torch_is_reported_once_and_not_retried(tmp_path):
    python = fake_python(
        tmp_path, """echo '{"event": "fatal", "message": "no torch here", "fix": "install it"}'; exit 3"""
    )
    states = States()
    supervisor = Supervisor(states.on_state, states.on_ready, backoff=(0.01,))
    supervisor.start(python)
    with pytest.raises(WorkerUnavailable, match="no torch here"):
        await supervisor.get()
    assert supervisor.starts == 1 and states.seen[-1] == ("error", "no torch here — install it")
    await supervisor.stop()


async def test_a_missing_interpreter_is_an_error_not_a_crash(tmp_path):
    states = States()
    supervisor = Supervisor(states.on_state, states.on_ready)
    supervisor.start(str(tmp_path / "nope"))
    with pytest.raises(WorkerUnavailable, match="cannot run the interpreter"):
        await supervisor.get()
    await supervisor.stop()

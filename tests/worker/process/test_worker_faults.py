"""Faults of the worker itself (issue 5): killed mid-trace, or an interpreter that cannot run it.

Restarting a dead worker is the server's job; here the client must fail the pending request with a
clear WorkerUnavailable, and leave nothing running.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fxlens.engine.worker_client import WorkerUnavailable
from hostile_support import TrackedWorker, wait_until_gone

STARTED_THEN_HANGS = """import time
import torch.nn as nn


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        open("{marker}", "w").close()
        time.sleep(3600)

    def forward(self, x):
        return x
"""


def _wait_for_file(path: Path, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


async def test_worker_killed_mid_trace_fails_the_pending_request(tmp_path, monkeypatch):
    worker = TrackedWorker()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))  # where the worker keeps the children's stack dumps
    await worker.start()
    marker = tmp_path / "started"
    pending = asyncio.ensure_future(worker.analyse(tmp_path / "slow.py", STARTED_THEN_HANGS.format(marker=marker)))
    await asyncio.get_running_loop().run_in_executor(None, _wait_for_file, marker)
    os.kill(worker.pid, signal.SIGKILL)
    with pytest.raises(WorkerUnavailable) as raised:
        await pending
    assert raised.value.message == "the worker was killed (SIGKILL)"
    assert not worker.client.alive
    # the trace child dies with the worker (parent-death signal), so nothing carries the token
    assert wait_until_gone(worker.token, None) == []
    assert list(temporary.iterdir()) == []  # no stack-dump file outlives a worker killed without warning
    await worker.client.stop()


async def test_interpreter_that_does_not_exist(tmp_path):
    missing = str(tmp_path / "no" / "python3")
    worker = TrackedWorker(missing)
    with pytest.raises(WorkerUnavailable) as raised:
        await worker.start()
    assert missing in raised.value.message
    assert "fxlens.python" in raised.value.fix


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("venv") / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


async def test_interpreter_without_torch(python_without_torch):
    worker = TrackedWorker(python_without_torch)
    with pytest.raises(WorkerUnavailable) as raised:
        await worker.start()
    assert f"torch cannot be imported by {python_without_torch}" in raised.value.message
    assert f"{python_without_torch} -m pip install torch" in raised.value.fix
    assert wait_until_gone(worker.token, None) == []


async def test_torch_too_old(tmp_path, monkeypatch):
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    # an old torch lacks torch.export: only the version check may speak, not the failed import
    (fake / "__init__.py").write_text('__version__ = "1.13.0"\n')
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    worker = TrackedWorker()
    with pytest.raises(WorkerUnavailable) as raised:
        await worker.start()
    assert "torch 1.13.0" in raised.value.message and "too old" in raised.value.message
    assert "pip install -U torch" in raised.value.fix
    assert wait_until_gone(worker.token, None) == []


async def test_a_failing_class_callback_fails_only_its_request(tmp_path):
    from fxlens.engine.worker_client import Listeners, TraceOptions, WorkerClient

    client = WorkerClient()
    await client.start()
    try:
        model = tmp_path / "m.py"
        model.write_text(
            "import torch\n\n# fxlens: M()(torch.randn(2, 3))\nclass M(torch.nn.Module):\n"
            "    def forward(self, x):\n        return x * 2\n"
        )

        def broken(report):
            raise RuntimeError("callback bug")

        with pytest.raises(RuntimeError, match="callback bug"):
            await client.submit(str(model), model.read_text(), TraceOptions(), listeners=Listeners(on_class=broken))
        report = await client.analyse(str(model), model.read_text(), TraceOptions())  # the reader lives on
        assert report.find_class("M").levels["fx"].ok
    finally:
        await client.stop()

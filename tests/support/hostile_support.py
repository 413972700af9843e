"""Shared by the hostile-code tests: a worker whose processes can be found, fixtures, the good text.

Every process a worker starts inherits its environment, so a unique token in the worker's
environment marks the worker, its trace children and anything user code spawns (even in a new
session, even double-forked): after a trace, only the worker itself may carry the token.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import FileReport

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"
TOKEN_VARIABLE = "FXLENS_TEST_PROCESS_TOKEN"


def fixture_text(name: str, **markers: str) -> str:
    text = (FIXTURES / name).read_text()
    for key, value in markers.items():
        text = text.replace(f"@{key}@", value)
    return text


def hostile_line(text: str) -> int:
    """The 1-based line the fixture marks with `# HOSTILE` (0 when it marks none)."""
    return next((n for n, line in enumerate(text.splitlines(), 1) if "# HOSTILE" in line), 0)


def _parent_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _carries(pid: str, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"{TOKEN_VARIABLE}={token}".encode() in environ.read().split(b"\0")
    except OSError:
        return False


def _is_standby(pid: str, worker_pid: int | None) -> bool:
    """The worker's one idle child, forked ahead of the next trace (it names itself `fxlens-standby`)."""
    try:
        with open(f"/proc/{pid}/comm") as comm:
            name = comm.read().strip()
    except OSError:
        return False
    return name == "fxlens-standby" and worker_pid is not None and _parent_of(pid) == worker_pid


def processes_of(token: str, worker_pid: int | None) -> list[int]:
    """Every process but the worker (and its standby) carrying the token, plus any other child (even a
    zombie) of the worker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == worker_pid or _is_standby(pid, worker_pid):
            continue
        if _carries(pid, token) or (worker_pid is not None and _parent_of(pid) == worker_pid):
            found.append(int(pid))
    return found


def wait_until_gone(token: str, worker_pid: int | None, within: float = 10.0) -> list[int]:
    """Poll (bounded) until no leftover remains; returns those still there at the deadline."""
    deadline = time.monotonic() + within
    while True:
        left = processes_of(token, worker_pid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def leftovers_besides(token: str, allowed: set[int], within: float = 10.0) -> list[int]:
    """Processes carrying `token` other than `allowed` (and the standby of an allowed worker), polled
    (bounded) until there are none."""
    deadline = time.monotonic() + within
    while True:
        left = sorted(
            p
            for p in processes_of(token, None)
            if p not in allowed and not any(_is_standby(str(p), worker) for worker in allowed)
        )
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def wait_for_file(path: Path, within: float = 60.0) -> None:
    """Poll (bounded) for a marker file user code writes when it has started."""
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


class TrackedWorker:
    """A WorkerClient started with a process token in its environment."""

    def __init__(self, python: str | None = None) -> None:
        self.token = uuid.uuid4().hex
        self.client = WorkerClient(python) if python else WorkerClient()

    async def start(self) -> dict:
        os.environ[TOKEN_VARIABLE] = self.token  # WorkerClient copies os.environ when it starts
        try:
            return await self.client.start()
        finally:
            del os.environ[TOKEN_VARIABLE]

    @property
    def pid(self) -> int | None:
        return self.client.process.pid if self.client.process else None

    async def analyse(self, path: Path, text: str, **options) -> FileReport:
        return await self.client.analyse(str(path), text, TraceOptions(**options))

    def leftovers(self) -> list[int]:
        return wait_until_gone(self.token, self.pid if self.client.alive else None)


def assert_good_report(report: FileReport) -> None:
    """The report of `good.py`: nothing an earlier hostile trace did may show in it."""
    assert [d for d in report.all_diagnostics() if d.severity == "error"] == []
    good = report.find_class("Good")
    assert good is not None, [c.name for c in report.classes]
    fx = good.levels["fx"]
    assert fx.ok
    assert [(n.op, n.target) for n in fx.nodes] == [
        ("placeholder", "x"),
        ("call_module", "fc"),
        ("call_function", "torch.relu"),
        ("call_function", "operator.mul"),
        ("output", "output"),
    ]
    mul = fx.nodes[3]
    assert mul.shape == [2, 3] and mul.dtype == "float32"
    assert mul.text.endswith("args = (%relu, 2), kwargs = {})"), mul.text
    assert mul.line == 14
    aten = good.levels["aten"]
    assert aten.ok and "aten.linear.default" in [n.target for n in aten.nodes]

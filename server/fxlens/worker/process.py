"""The warm worker: imports torch once, then runs each analysis in a forked, killable child.

Messages are JSON lines: requests on stdin, events on the original stdout (which user code can no
longer reach: fd 1 is pointed at stderr before anything else runs).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from fxlens.worker import isolation

MAX_CHILDREN = 2
MIN_TORCH = (2, 2)


@dataclass
class Job:
    id: int
    request: dict
    pid: int = 0
    read_fd: int = -1
    buffer: bytes = b""
    deadline: float = 0.0
    dump_path: str = ""
    classes: dict = field(default_factory=dict)
    done: bool = False


class Worker:
    def __init__(self, send: Callable[[dict], None]) -> None:
        self.send = send
        self.selector = selectors.DefaultSelector()
        self.queue: list[Job] = []
        self.running: dict[int, Job] = {}
        self.stdin_buffer = b""
        self.stopping = False

    # -- requests --------------------------------------------------------------------------------

    def handle(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "trace":
            self.queue.append(Job(int(message["id"]), message))
        elif kind == "cancel":
            self.cancel(int(message["id"]))
        elif kind == "shutdown":
            self.stopping = True
        elif kind == "ping":
            self.send({"id": message.get("id"), "event": "pong"})

    def cancel(self, job_id: int) -> None:
        self.queue = [j for j in self.queue if j.id != job_id]
        job = self.running.get(job_id)
        if job is not None:
            self._finish(job, kill=True)
        self.send({"id": job_id, "event": "cancelled"})

    # -- children --------------------------------------------------------------------------------

    def _start(self, job: Job) -> None:
        fd, job.dump_path = tempfile.mkstemp(prefix="fxlens-stack-")
        os.close(fd)
        job.read_fd, job.pid = isolation.fork_analysis(job.request, job.dump_path)
        os.set_blocking(job.read_fd, False)
        job.deadline = time.monotonic() + float(job.request.get("timeout", 60))
        self.running[job.id] = job
        self.selector.register(job.read_fd, selectors.EVENT_READ, job)

    def _read_child(self, job: Job) -> None:
        try:
            chunk = os.read(job.read_fd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self._finish(job, kill=False)
            return
        job.buffer += chunk
        *lines, job.buffer = job.buffer.split(b"\n")
        for line in lines:
            event = json.loads(line)
            if event["event"] == "class":
                job.classes[event["class"]["name"]] = event["class"]
            elif event["event"] == "done":
                job.done = True
            self.send({"id": job.id, **event})

    def _finish(self, job: Job, kill: bool, reason: Optional[str] = None) -> None:
        """Reap the child (and anything it spawned); if it died without a report, make one."""
        if kill and reason is not None:
            isolation.request_stack_dump(job.pid, job.dump_path)
        isolation.kill_group(job.pid)
        status = isolation.reap(job.pid)
        self.selector.unregister(job.read_fd)
        os.close(job.read_fd)
        self.running.pop(job.id, None)
        if not job.done and (reason is not None or not kill):
            report = isolation.report_for_lost_child(job, reason, status)
            self.send({"id": job.id, "event": "done", "report": report})
        try:
            os.unlink(job.dump_path)
        except OSError:
            pass

    # -- the loop --------------------------------------------------------------------------------

    def _read_stdin(self) -> bool:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return False
        self.stdin_buffer += chunk
        *lines, self.stdin_buffer = self.stdin_buffer.split(b"\n")
        for line in lines:
            if line.strip():
                try:
                    self.handle(json.loads(line))
                except (ValueError, KeyError, TypeError) as error:
                    self.send({"event": "error", "message": f"bad request: {error}"})
        return True

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, None)
        while not (self.stopping and not self.running):
            while self.queue and len(self.running) < MAX_CHILDREN and not self.stopping:
                self._start(self.queue.pop(0))
            now = time.monotonic()
            timeout = min((j.deadline for j in self.running.values()), default=now + 1.0) - now
            for key, _ in self.selector.select(max(timeout, 0.0)):
                if key.data is None:
                    if not self._read_stdin():
                        self.stopping = True
                        self.selector.unregister(0)
                        for job in list(self.running.values()):
                            self._finish(job, kill=True)
                else:
                    self._read_child(key.data)
            for job in list(self.running.values()):
                if time.monotonic() >= job.deadline:
                    self._finish(job, kill=True, reason=f"timed out after {job.request.get('timeout', 60)} s")


def _import_torch() -> dict:
    import torch
    import torch.export  # noqa: F401  (children would each pay for these imports)
    import torch.fx  # noqa: F401
    from torch._subclasses import fake_tensor  # noqa: F401
    from torch.fx.experimental import symbolic_shapes  # noqa: F401

    from fxlens.worker import analyse  # noqa: F401

    _warm_up(torch)
    return {"python": sys.version.split()[0], "torch": torch.__version__}


def _warm_up(torch) -> None:
    """Pay torch.export's first-call cost once here, so every forked child starts warm."""
    with torch.device("meta"):
        probe = torch.nn.Linear(2, 2)
        example = (torch.randn(2, 2),)
    torch.fx.symbolic_trace(probe)
    torch.export.export(probe, example, strict=False)


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr, never into the channel
    sys.stdout = sys.stderr
    isolation.die_with_parent()

    def send(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")

    try:
        versions = _import_torch()
    except Exception as error:
        send({"event": "fatal", "message": f"torch cannot be imported by {sys.executable}: "
                                           f"{type(error).__name__}: {error}",
              "fix": f"Install it (`{sys.executable} -m pip install torch`) or point fxlens.python at an "
                     "interpreter that has it."})
        return 3
    major_minor = tuple(int(p) for p in versions["torch"].split(".")[:2] if p.isdigit())
    if major_minor < MIN_TORCH:
        send({"event": "fatal", "message": f"torch {versions['torch']} is too old for fxlens (needs >= 2.2)",
              "fix": f"`{sys.executable} -m pip install -U torch`"})
        return 3
    send({"event": "ready", "pid": os.getpid(), "executable": sys.executable, **versions})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    Worker(send).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())

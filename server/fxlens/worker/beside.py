"""Run a piece of the analysis in a forked process beside this one, on the machine's other core.

Only plain data comes back (JSON through a pipe). The process is forked from the trace child, so it
belongs to the trace's process group and dies with it (a timeout, a cancel, the trace child's death).
"""
from __future__ import annotations

import json
import os
import posix
import signal
from typing import Any, Callable


class Lost(Exception):
    """The process died before it answered (a crash, or killed)."""


class Beside:
    """`work()` started in a forked process; `result()` waits for what it returned.

    Where fork is unavailable or fails, `work` runs in `result()`, in this process."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.work = work
        self.pid, self.read_fd = 0, -1
        if hasattr(os, "fork"):
            try:
                self._fork()
            except OSError:
                self.pid = 0  # out of processes or memory

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid:
            os.close(write_fd)
            self.pid, self.read_fd = pid, read_fd
            return
        # in the forked process: never return. posix._exit, not os._exit: the trace child patches the
        # latter to record user code exiting, and this is not user code exiting.
        status = 0
        try:
            os.close(read_fd)
            with os.fdopen(write_fd, "w") as out:
                out.write(json.dumps(self.work()))
        except BaseException:  # noqa: BLE001  nothing may escape into the trace child's code
            status = 1
        finally:
            posix._exit(status)

    def result(self) -> Any:
        if not self.pid:
            return self.work()
        chunks = []
        with os.fdopen(self.read_fd, "rb") as data:
            for chunk in iter(lambda: data.read(1 << 20), b""):
                chunks.append(chunk)
        os.waitpid(self.pid, 0)
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            raise Lost("the process died before it answered") from None

    def cancel(self) -> None:
        if self.pid:
            os.close(self.read_fd)
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

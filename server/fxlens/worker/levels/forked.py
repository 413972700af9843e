"""Run a piece of the analysis in a forked process, on the machine's other core.

Only plain data comes back (JSON through a pipe). The process is forked from the trace child, so it
belongs to the trace's process group and dies with it (a timeout, a cancel, the trace child's death).

A fork copies the memory of every thread but runs only the one that forked. Whatever another thread held
stays held in the new process: GNU OpenMP's thread team, once the trace child has run a CPU kernel in
parallel (a LayerNorm on real tensors), is such a thing: the forked process's first parallel kernel waits
forever at the team's barrier for threads it does not have. So the forked process runs torch on one thread
(it is on the other core anyway), and whatever still keeps it from answering costs its caller at most a
bounded wait (`patience`), after which it is killed and its work is Lost, never the trace's whole time.
"""

from __future__ import annotations

import json
import os
import posix
import select
import signal
import time
from collections.abc import Callable
from typing import Any

import torch

# how long a caller waits for the answer: the forked work is the work the caller did itself since the fork
# (on larger sizes, or at a second size), so a multiple of the CPU time the caller spent since then; CPU time,
# not wall time: a caller waiting for another forked process meanwhile did no work of its own
MIN_WAIT_SECONDS = 10.0
WAIT_FACTOR = 4.0


class Lost(Exception):
    """The process died, or did not answer in time (killed), before it answered: the reason is the message."""


class ForkedCall:
    """`work()` started in a forked process; `result()` waits for what it returned.

    With `more`, the process then waits: `more_result()` runs `more()` there, after `work()`, in the
    same process (so it reuses whatever `work` left behind, an exported program), and `close()` lets it
    go. Where fork is unavailable or fails, both run in this process when their result is asked for.
    """

    def __init__(
        self, work: Callable[[], Any], more: Callable[[], Any] | None = None, min_wait: float = MIN_WAIT_SECONDS
    ) -> None:
        self.work, self.more, self.min_wait = work, more, min_wait
        self.pid, self.read_fd, self.go_fd = 0, -1, -1
        self.started = time.process_time()
        self._pending = b""
        if hasattr(os, "fork"):
            try:
                self._fork()
            except OSError:
                self.pid = 0  # out of processes or memory

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()
        go_read, go_write = os.pipe() if self.more is not None else (-1, -1)
        pid = os.fork()
        if pid:
            os.close(write_fd)
            if go_read >= 0:
                os.close(go_read)
            self.pid, self.read_fd, self.go_fd = pid, read_fd, go_write
            return
        # in the forked process: never return. posix._exit, not os._exit: the trace child patches the
        # latter to record user code exiting, and this is not user code exiting.
        status = 0
        try:
            torch.set_num_threads(1)  # a parallel kernel would wait for OpenMP threads this process lacks
            os.close(read_fd)
            if go_write >= 0:
                os.close(go_write)
            with os.fdopen(write_fd, "w") as out:
                out.write(json.dumps(self.work()) + "\n")
                out.flush()
                if self.more is not None and os.read(go_read, 1):
                    out.write(json.dumps(self.more()) + "\n")
        except BaseException:  # noqa: BLE001  nothing may escape into the trace child's code
            status = 1
        finally:
            posix._exit(status)

    def patience(self) -> float:
        """Seconds to wait from now: the caller's CPU time since the fork, times WAIT_FACTOR, and MIN_WAIT."""
        return self.min_wait + WAIT_FACTOR * (time.process_time() - self.started)

    def _answer(self) -> Any:
        """The next line the process writes, or Lost once `patience()` has passed without it."""
        wait = self.patience()
        until = time.monotonic() + wait
        while b"\n" not in self._pending:
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                self.cancel()
                raise Lost(f"it did not answer within {wait:.0f} s and was stopped")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                self.close()
                raise Lost("it died before it answered")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            self.close()
            raise Lost("it died before it answered") from None

    def result(self) -> Any:
        if not self.pid:
            return self.work()
        try:
            return self._answer()
        finally:
            if self.more is None:
                self.close()

    def start_more(self) -> None:
        """Have the process run `more()` now (after `result()`); `more_result()` gives what it returned."""
        assert self.more is not None
        if self.pid and self.go_fd >= 0:
            try:
                os.write(self.go_fd, b"1")
            except OSError:
                pass  # it died: more_result() says so
            os.close(self.go_fd)
            self.go_fd = -1

    def more_result(self) -> Any:
        """What `more()` returns, run after `work()` in the forked process (call `result()` first)."""
        assert self.more is not None
        if not self.pid:
            return self.more()
        self.start_more()
        try:
            return self._answer()
        finally:
            self.close()

    def close(self) -> None:
        """Let the process go (it exits once it has nothing more to do) and reap it."""
        if not self.pid:
            return
        if self.go_fd >= 0:
            # never asked for `more`: it waits for the end of the go pipe, which a process forked since
            # (another class's forked process) may hold open too. Nothing it has left is wanted: end it.
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.go_fd)
        self.go_fd = -1
        if self.read_fd >= 0:
            os.close(self.read_fd)
        self.read_fd = -1
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.pid = 0

    def cancel(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.close()

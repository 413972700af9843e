"""The trace child's end of its channel to the worker, immune to what user code does to the process.

Everything it uses is bound when the child starts, before user code runs: a top-level
`json.dumps = ...` or a patched `os.write` cannot forge or silence fxlens's events. Code that closes
file descriptors it did not open (`os.closerange(3, 4096)`, daemon code) closes the channel too; the
channel then opens the worker's end of the same pipe again, through /proc, and carries on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from fxlens.worker.failures.limits import MAX_EVENT_BYTES


class EventTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


class Channel:
    def __init__(self, fd: int, worker_pid: int, worker_fd: int) -> None:
        self.fd, self.worker_pid, self.worker_fd = fd, worker_pid, worker_fd
        encoder = json.JSONEncoder()
        # bound now: patching JSONEncoder later changes nothing
        encoder.iterencode = encoder.iterencode  # type: ignore[method-assign]  # deliberately an instance attribute
        self._encode: Callable[[object], str] = encoder.encode
        self._write, self._fstat, self._open, self._dup2, self._close = os.write, os.fstat, os.open, os.dup2, os.close
        self._len = len  # (a top-level `builtins.len = ...` must not reach fxlens either)
        self.inode = os.fstat(fd).st_ino

    def send(self, event: dict) -> None:
        """Write one event as one line; EventTooLarge (nothing written) past the channel's limit."""
        data = (self._encode(event) + "\n").encode("utf-8", "surrogatepass")
        size = self._len(data)
        if size > MAX_EVENT_BYTES:
            raise EventTooLarge(size)
        self._reconnect_if_closed()
        view = memoryview(data)
        while view:
            view = view[self._write(self.fd, view) :]

    def _reconnect_if_closed(self) -> None:
        try:
            if self._fstat(self.fd).st_ino == self.inode:
                return
            free = False  # the number was reused for a file of the user's: leave it alone
        except OSError:
            free = True
        # the worker still holds the read end: /proc gives a new write end of the same pipe
        fd = self._open(f"/proc/{self.worker_pid}/fd/{self.worker_fd}", os.O_WRONLY)
        if free and fd != self.fd:
            self._dup2(fd, self.fd)  # back out of the way of the low numbers user code uses
            self._close(fd)
        else:
            self.fd = fd
        self.inode = self._fstat(self.fd).st_ino

"""The last commit's version of an open file, traced once per commit: what the "vs HEAD" lens compares
the buffer's graphs with (the `fxlens.diffLens` setting).

The HEAD text is traced under the file's own path, so its package and relative imports resolve as the
buffer's do (its imports are today's files: the lens answers "what did my edits of this file do").
Git runs as a subprocess of the event loop; the trace is one more request to the warm worker.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fxlens.engine.worker_client import WorkerUnavailable
from fxlens.report import FileReport

Trace = Callable[[str], Awaitable[FileReport]]


@dataclass(frozen=True)
class Baseline:
    commit: str
    text: str
    report: FileReport


async def _git(cwd: str, *args: str) -> str | None:
    try:
        process = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
    except OSError:
        return None  # no git: no baseline, no lens
    out, _ = await process.communicate()
    return out.decode("utf-8", errors="replace") if process.returncode == 0 else None


async def head_text(path: str) -> tuple[str, str] | None:
    """(commit, text) of `path` at HEAD; None outside a repository or for a file HEAD does not have."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return None
    commit = await _git(folder, "rev-parse", "--verify", "--quiet", "HEAD")
    if not commit:
        return None
    text = await _git(folder, "show", f"{commit.strip()}:./{os.path.basename(path)}")
    return None if text is None else (commit.strip(), text)


class Baselines:
    """path -> the traced HEAD version; one lookup in flight per path, a new trace only when HEAD or
    the options change (`key`)."""

    def __init__(self) -> None:
        self._done: dict[str, tuple[str, Baseline | None]] = {}  # path -> (key it was made for, baseline)
        self._running: dict[str, asyncio.Future[None]] = {}

    def current(self, path: str) -> Baseline | None:
        entry = self._done.get(path)
        return entry[1] if entry else None

    def refresh(self, path: str, key: str, trace: Trace, on_ready: Callable[[], None]) -> None:
        """Look again (HEAD may have moved) unless a look is already running; `on_ready` when a new
        baseline is in."""
        task = self._running.get(path)
        if task is not None and not task.done():
            return
        self._running[path] = asyncio.ensure_future(self._look(path, key, trace, on_ready))

    def forget(self, path: str) -> None:
        task = self._running.pop(path, None)
        if task is not None:
            task.cancel()
        self._done.pop(path, None)

    async def _look(self, path: str, key: str, trace: Trace, on_ready: Callable[[], None]) -> None:
        head = await head_text(path)
        full_key = f"{head[0] if head else ''}\0{key}"
        if path in self._done and self._done[path][0] == full_key:
            return
        baseline = None
        if head is not None:
            try:
                baseline = Baseline(head[0], head[1], await trace(head[1]))
            except WorkerUnavailable:
                return  # the worker is down: the next lens request looks again
        self._done[path] = (full_key, baseline)
        on_ready()

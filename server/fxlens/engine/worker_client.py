"""The server side of the worker: start it in the user's interpreter, send requests, collect reports."""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Optional

from fxlens.report import DEFAULT_LEVELS, ClassReport, FileReport, class_from_json, file_from_json, ladder_sorted

SERVER_DIR = str(Path(__file__).resolve().parents[2])  # the folder holding the `fxlens` package


def _exit_words(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker was killed ({name})"
    return f"the worker exited (status {code})"


class WorkerUnavailable(Exception):
    """The worker could not start: no such interpreter, no torch, torch too old."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass
class TraceOptions:
    levels: tuple[str, ...] = DEFAULT_LEVELS
    execution: str = "safe"
    timeout: float = 60.0
    memory_mb: int = 4096


OnClass = Callable[[ClassReport], None]
# the worker's `stage` event: every class of the request now has these (cheap) levels; the deeper follow
OnStage = Callable[[list[str]], None]


class WorkerClient:
    def __init__(self, python: str = sys.executable, on_exit: Optional[Callable[[int], None]] = None) -> None:
        self.python = python
        self.on_exit = on_exit
        self.process: Optional[asyncio.subprocess.Process] = None
        self.info: dict = {}
        self._ids = itertools.count(1)
        # job id -> (its future, its callback, its classes so far)
        self._pending: dict[int, tuple[asyncio.Future, Optional[OnClass], dict[str, ClassReport]]] = {}
        self._on_stage: dict[int, OnStage] = {}
        self._reader: Optional[asyncio.Task] = None
        self._stderr: Optional[asyncio.Task] = None
        self.stderr_lines: list[str] = []

    async def start(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [SERVER_DIR, env.get("PYTHONPATH")]))
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "fxlens-inductor"))
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.python, "-m", "fxlens.worker", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, limit=1 << 26)
        except (FileNotFoundError, PermissionError) as error:
            raise WorkerUnavailable(f"cannot run the interpreter {self.python!r}: {error.strerror}",
                                    "Set fxlens.python to a Python interpreter that has torch installed.") from error
        self._stderr = asyncio.create_task(self._drain_stderr())
        line = await self.process.stdout.readline()
        if not line:
            await self.process.wait()
            tail = "\n".join(self.stderr_lines[-5:])
            raise WorkerUnavailable(f"the worker ({self.python}) exited at start: {tail or 'no output'}",
                                    "Check that this interpreter runs and has torch installed.")
        first = json.loads(line)
        if first.get("event") == "fatal":
            await self.process.wait()
            raise WorkerUnavailable(first["message"], first.get("fix", ""))
        self.info = first
        self._reader = asyncio.create_task(self._read_events())
        return first

    async def _drain_stderr(self) -> None:
        assert self.process and self.process.stderr
        async for raw in self.process.stderr:
            self.stderr_lines.append(raw.decode(errors="replace").rstrip())
            del self.stderr_lines[:-200]

    async def _read_events(self) -> None:
        assert self.process and self.process.stdout
        try:
            async for raw in self.process.stdout:
                self._dispatch(raw)
        except asyncio.CancelledError:
            # the server's loop is closing (the editor went away without `shutdown`): a worker nobody
            # reads from must not be waited for, alive
            if self.process.returncode is None:
                self.process.kill()
            raise
        finally:
            code = await self.process.wait()
            for future, _, _ in self._pending.values():
                if not future.done():
                    future.set_exception(WorkerUnavailable(_exit_words(code)))
            if self.on_exit is not None:
                self.on_exit(code)

    def _dispatch(self, raw: bytes) -> None:
        """One event from the worker; a bad one fails its own request, never the reader."""
        try:
            event = json.loads(raw)
        except ValueError:
            self.stderr_lines.append(f"unreadable worker message: {raw[:200]!r}")
            return
        entry = self._pending.get(event.get("id"))
        if entry is None:
            return
        future, on_class, classes = entry
        try:
            if event["event"] == "class":
                # each event carries the levels finished since the last one for that class
                fresh = class_from_json(event["class"])
                earlier = classes.get(fresh.name)
                if earlier is not None:
                    fresh.levels = ladder_sorted({**earlier.levels, **fresh.levels})
                classes[fresh.name] = fresh
                if on_class is not None:
                    on_class(fresh)
            elif event["event"] == "stage" and event.get("id") in self._on_stage:
                self._on_stage[event["id"]]([str(level) for level in event["levels"]])
            elif event["event"] == "done" and not future.done():
                # `done` is the file-level part: the classes came one event at a time
                report = file_from_json(event["report"])
                report.classes = list(classes.values())
                future.set_result(report)
        except Exception as error:  # a malformed report or a failing callback: that request's error
            if not future.done():
                future.set_exception(error)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def _send(self, message: dict) -> None:
        if not self.alive:
            raise WorkerUnavailable("the worker is not running")
        assert self.process and self.process.stdin
        self.process.stdin.write((json.dumps(message) + "\n").encode())

    def submit(self, path: str, text: str, options: TraceOptions, first: Optional[str] = None,
               classes: Optional[list[str]] = None, on_class: Optional[OnClass] = None,
               known: Optional[dict[str, str]] = None, roots: Optional[list[str]] = None,
               buffers: Optional[dict[str, str]] = None, on_stage: Optional[OnStage] = None,
               notes: bool = True) -> Awaitable[FileReport]:
        """Send a trace request at once; awaiting the result gives the report, and cancelling that
        await kills the trace in flight.

        `known`: class name -> fingerprint of a trace the caller holds; such a class whose fingerprint is
        unchanged is not traced again but listed in the report's `unchanged`. `roots`: folders to make
        importable (workspace folders; their `src/` too). `buffers`: path -> text of other open
        buffers, imported instead of those files on disk. `on_stage`: told when every class has its
        cheap levels (the deeper ones asked for follow). `notes`: False when the caller holds the
        classes' cheap levels and asks for deeper ones only (the hints on how a class was built are
        not repeated on them)."""
        job_id = next(self._ids)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._send({"type": "trace", "id": job_id, "path": os.path.abspath(path), "text": text,
                    "levels": list(options.levels), "execution": options.execution, "timeout": options.timeout,
                    "memory_mb": options.memory_mb, "first": first, "classes": classes, "known": known or {},
                    "roots": [os.path.abspath(r) for r in roots or []],
                    "buffers": {os.path.abspath(p): t for p, t in (buffers or {}).items()}, "notes": notes})
        self._pending[job_id] = (future, on_class, {})
        if on_stage is not None:
            self._on_stage[job_id] = on_stage
        return self._result(job_id, future)

    async def _result(self, job_id: int, future: asyncio.Future) -> FileReport:
        try:
            return await future
        except asyncio.CancelledError:
            if self.alive:
                self._send({"type": "cancel", "id": job_id})
            raise
        finally:
            self._pending.pop(job_id, None)
            self._on_stage.pop(job_id, None)

    async def analyse(self, path: str, text: str, options: TraceOptions, first: Optional[str] = None,
                      classes: Optional[list[str]] = None, on_class: Optional[OnClass] = None,
                      known: Optional[dict[str, str]] = None, roots: Optional[list[str]] = None,
                      buffers: Optional[dict[str, str]] = None) -> FileReport:
        """The report for one buffer (see `submit`)."""
        return await self.submit(path, text, options, first, classes, on_class, known, roots, buffers)

    async def stop(self) -> None:
        if self.alive:
            assert self.process and self.process.stdin
            try:
                self._send({"type": "shutdown"})
                self.process.stdin.close()
                await asyncio.wait_for(self.process.wait(), 5)
            except (asyncio.TimeoutError, ConnectionError, WorkerUnavailable):
                self.process.kill()
                await self.process.wait()
        for task in (self._reader, self._stderr):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

"""Trace many files on `jobs` warm workers at once: each worker imports torch once and takes the next
file as soon as it is free (the queue, not a fixed split, so one slow file does not hold the others)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from fxlens.engine.worker_client import TraceOptions, WorkerClient, WorkerUnavailable
from fxlens.report import Diagnostic, FileReport

OnDone = Callable[[str, FileReport], None]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _worker_lost(path: str, error: WorkerUnavailable) -> FileReport:
    """The worker itself died on this file (a trace child's crash never does): the file's error, not the run's."""
    return FileReport(
        path=os.path.abspath(path),
        diagnostics=[
            Diagnostic(
                1,
                0,
                1,
                0,
                "error",
                "crash",
                f"the fxlens worker stopped while checking this file: {error.message}",
                fix="Run `fxlens check` on this file alone; if it happens again, please report it.",
            )
        ],
    )


async def _started(python: str) -> WorkerClient:
    client = WorkerClient(python)
    await client.start()
    return client


async def trace_all(
    files: list[tuple[str, str, list[str]]],
    python: str,
    options: TraceOptions,
    jobs: int,
    on_done: OnDone | None = None,
) -> dict[str, FileReport]:
    """path -> report for every (path, text, import roots); WorkerUnavailable when no worker can start at all."""
    if not files:
        return {}
    queue: asyncio.Queue[tuple[str, str, list[str]]] = asyncio.Queue()
    for item in files:
        queue.put_nowait(item)
    reports: dict[str, FileReport] = {}
    count = max(1, min(jobs, len(files)))
    # start every worker at once: their torch imports overlap; the first failure is the run's error
    clients = await asyncio.gather(*(_started(python) for _ in range(count)), return_exceptions=True)
    failures = [c for c in clients if isinstance(c, BaseException)]
    live = [c for c in clients if isinstance(c, WorkerClient)]
    try:
        if failures and not live:
            raise failures[0]

        async def drain(client: WorkerClient) -> None:
            while not queue.empty():
                path, text, roots = queue.get_nowait()
                try:
                    report = await client.analyse(path, text, options, roots=roots)
                except WorkerUnavailable as error:
                    report = _worker_lost(path, error)
                    await client.stop()
                    client = await _started(python)
                    live.append(client)
                reports[path] = report
                if on_done is not None:
                    on_done(path, report)

        await asyncio.gather(*(drain(c) for c in list(live)))
    finally:
        await asyncio.gather(*(c.stop() for c in live), return_exceptions=True)
    return reports

"""Levels the settings did not ask for, computed when someone wants them: a hover (which never waits:
it shows what is held and says what is being computed), the graph view or `fxlens.showGraph` (which
waits for the level it shows).

Such a trace runs only while no edit's trace is pending or running: a main trace starting meanwhile
takes the worker back (the on-demand trace is killed and starts again once the main one is done), so
a level nobody asked for in the settings never delays an fx/aten result. What comes back is kept per
class fingerprint (level_cache.py) and joins the document's reports.

An optimisation on top of the core: it calls the scheduler and the worker client, they never call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TypedDict

from fxlens.engine.documents import Document
from fxlens.engine.level_cache import LevelCache
from fxlens.engine.scheduler import Scheduler
from fxlens.engine.worker_client import TraceAsk, WorkerUnavailable
from fxlens.report import HOVER_LEVELS, ClassReport, FileReport, LevelResult, in_ladder_order

MAX_LOGGED = 50

# one on-demand request, as fxlens.debugInfo lists it ("class" is a keyword: the functional form)
LoggedRequest = TypedDict("LoggedRequest", {"uri": str, "class": str, "levels": list[str]})


class OnDemand:
    def __init__(self, scheduler: Scheduler, on_levels: Callable[[Document, str, list[str]], None]) -> None:
        self.scheduler = scheduler
        self.on_levels = on_levels
        self.cache = LevelCache()
        self._jobs: dict[tuple[str, str, str], asyncio.Task[None]] = {}  # (uri, class, level) -> its trace
        self._submits: set[asyncio.Future[FileReport]] = set()  # worker requests in flight
        self._preempted: set[asyncio.Future[FileReport]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # what was asked of the worker, newest last (fxlens.debugInfo)
        self.requested: list[LoggedRequest] = []

    def attach(self, doc: Document, report: ClassReport, text: str) -> ClassReport:
        """The scheduler's hook: a class just traced, with the levels held for its fingerprint."""
        return self.cache.attach(doc.path, report, text)

    # -- who wants what --------------------------------------------------------------------------

    def hovered(self, doc: Document, report: FileReport, line: int, asked: tuple[str, ...]) -> tuple[str, ...]:
        """A hover on `line`: start every deeper level its class lacks that the settings do not trace
        anyway (those a hover starts: report.HOVER_LEVELS); the levels being computed for that class (the
        hover says so, and does not wait)."""
        cls = next((c for c in report.classes if c.line <= line <= c.end_line), None)
        if cls is None:
            return ()
        self.want(
            doc, cls.name, tuple(level for level in HOVER_LEVELS if level not in cls.levels and level not in asked)
        )
        return self.computing(doc, cls.name)

    def computing(self, doc: Document, name: str) -> tuple[str, ...]:
        return in_ladder_order(
            level
            for (uri, cls, level), task in self._jobs.items()
            if uri == doc.uri and cls == name and not task.done()
        )

    def want(self, doc: Document, name: str, levels: tuple[str, ...]) -> list[asyncio.Task[None]]:
        """Start computing those of `levels` not already under way; the traces that will bring them."""
        fresh = tuple(level for level in levels if not self._running(doc, name, level))
        if fresh:
            task = asyncio.create_task(self._compute(doc, name, fresh), name=f"fxlens {name}: {', '.join(fresh)}")
            for level in fresh:
                self._jobs[(doc.uri, name, level)] = task
            task.add_done_callback(lambda done: self._forget(done))
        return list(
            dict.fromkeys(
                self._jobs[(doc.uri, name, level)] for level in levels if (doc.uri, name, level) in self._jobs
            )
        )

    async def ensure(self, doc: Document, name: str, levels: tuple[str, ...]) -> None:
        """Compute those of `levels` the class lacks, and wait for them (the graph view shows one)."""
        cls = doc.view().report.find_class(name)
        missing = tuple(level for level in levels if cls is None or level not in cls.levels)
        if missing:
            await asyncio.gather(*self.want(doc, name, missing), return_exceptions=True)

    def _running(self, doc: Document, name: str, level: str) -> bool:
        task = self._jobs.get((doc.uri, name, level))
        return task is not None and not task.done()

    def _forget(self, task: asyncio.Task[None]) -> None:
        for k in [k for k, t in self._jobs.items() if t is task]:
            del self._jobs[k]

    # -- yielding to the main traces -------------------------------------------------------------

    def busy(self, active: int) -> None:
        """The scheduler's count of main traces changed: while any runs, no on-demand trace does."""
        if active:
            self._idle.clear()
            for submit in list(self._submits):
                self._preempted.add(submit)
                submit.cancel()  # (kills the trace in flight: WorkerClient's contract)
        else:
            self._idle.set()

    def forget(self, doc: Document) -> None:
        """The document closed: its traces stop."""
        for (uri, _, _), task in list(self._jobs.items()):
            if uri == doc.uri:
                task.cancel()

    async def _quiet(self, doc: Document) -> None:
        while True:
            await self.scheduler.settled(doc)
            if self.scheduler.active == 0 and not doc.tracing:
                return
            await self._idle.wait()

    # -- one on-demand trace ---------------------------------------------------------------------

    async def _compute(self, doc: Document, name: str, levels: tuple[str, ...]) -> None:
        while True:
            await self._quiet(doc)
            traced = doc.good
            cls = traced.report.find_class(name) if traced is not None else None
            wanted = tuple(level for level in levels if cls is not None and level not in cls.levels)
            if traced is None or cls is None or not wanted:
                return
            try:
                report = await self._submit(doc, traced.text, name, wanted)
            except WorkerUnavailable:
                return  # the hover asks again; the supervisor reports the worker's state
            if report is None:
                continue  # preempted by an edit's trace: again once it is done
            fresh = report.find_class(name) or cls
            self.cache.put(
                doc.path,
                fresh,
                traced.text,
                {level: fresh.levels.get(level) or _lost(level, name, report) for level in wanted},
            )
            doc.update_classes(lambda held, text: self.cache.attach(doc.path, held, text))
            self.on_levels(doc, name, list(wanted))
            return

    async def _submit(self, doc: Document, text: str, name: str, levels: tuple[str, ...]) -> FileReport | None:
        client = await self.scheduler.supervisor.get()
        around = self.scheduler.workspace_context(doc)
        # the class's cost comes with its main trace: a deeper level adds nothing to it
        options = replace(self.scheduler.options(), levels=levels, cost=False)
        self.requested.append({"uri": doc.uri, "class": name, "levels": list(levels)})
        del self.requested[:-MAX_LOGGED]
        ask = TraceAsk(first=name, classes=[name], roots=list(around.roots), buffers=dict(around.buffers), notes=False)
        submit = asyncio.ensure_future(client.submit(doc.path, text, options, ask))
        self._submits.add(submit)
        try:
            return await submit
        except asyncio.CancelledError:
            outer = asyncio.current_task()
            cancelling = getattr(outer, "cancelling", lambda: 0)  # (Python 3.11+; before, a preemption wins)
            if submit in self._preempted and not cancelling():
                return None  # only the worker request was cancelled, by a main trace: not this task
            raise
        finally:
            self._submits.discard(submit)
            self._preempted.discard(submit)


def _lost(level: str, name: str, report: FileReport) -> LevelResult:
    """A level the trace ended without (it crashed, timed out, or the file failed to load): kept as a
    failed level saying why, so that a hover shows it instead of starting the same trace again."""
    why = [replace(d, level=level, class_name=name) for d in report.diagnostics if d.severity == "error"]
    return LevelResult(level, False, diagnostics=why, note=f"the trace computing {level} for {name} ended without it")

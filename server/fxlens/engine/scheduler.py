"""When to trace: debounce per document, newest text wins, class under the cursor first.

One asyncio task per document covers both the debounce wait and the trace: an edit cancels that
task, and cancelling it while it awaits the worker kills the trace in flight (WorkerClient's
contract). The event loop itself never waits on torch; handlers read whatever `Document.view()`
holds at that moment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from fxlens.engine.documents import Document, Traced, WorkspaceContext
from fxlens.engine.incremental import classes_without_cost, known_fingerprints, merge, needs_trace, reuse, with_cost
from fxlens.engine.supervisor import Supervisor
from fxlens.engine.worker_client import Listeners, TraceAsk, TraceOptions, WorkerUnavailable
from fxlens.report import ClassReport, Cost

DEBOUNCE_SECONDS = 0.25
# how often the worker is asked again, for one text, for the costs it stopped counting (a trace needed its
# place, its time limit came): a cost lost every time (a crash while counting it) stays missing after that
MAX_COST_RETRIES = 2


# what the engine's optimisations add to a class report of a document traced from a text (on_demand.py)
Attach = Callable[[Document, ClassReport, str], ClassReport]


class Hooks(Protocol):
    def started(self, doc: Document) -> None: ...
    # `levels`: those that arrived with this event (the report holds every level so far)
    def class_done(self, doc: Document, report: ClassReport, levels: list[str]) -> None: ...
    # every class being traced has `levels` (the cheap ones); the deeper levels asked for follow
    def stage_done(self, doc: Document, levels: list[str]) -> None: ...
    # the costs of classes `names` joined the report (counted after the trace's `done`)
    def costs_done(self, doc: Document, names: list[str]) -> None: ...
    def finished(self, doc: Document) -> None: ...
    def ended(self, doc: Document) -> None: ...
    def unavailable(self, doc: Document, error: WorkerUnavailable) -> None: ...
    def busy(self, active: int) -> None: ...


class Scheduler:
    def __init__(
        self,
        supervisor: Supervisor,
        hooks: Hooks,
        options: Callable[[], TraceOptions],
        debounce: float = DEBOUNCE_SECONDS,
        workspace_context: Callable[[Document], WorkspaceContext] = lambda doc: WorkspaceContext(),
        attach: Attach = lambda doc, report, text: report,
    ) -> None:
        self.supervisor = supervisor
        self.attach = attach
        self.hooks = hooks
        self.options = options
        self.workspace_context = workspace_context
        self.debounce = debounce
        self.active = 0
        self.traces_started = 0
        # uri -> (a version of its text, how often the worker was asked again for the costs of that text)
        self._cost_retries: dict[str, tuple[int, int]] = {}

    def schedule(
        self, doc: Document, delay: float | None = None, full: bool = False, costs: bool = False
    ) -> asyncio.Task[None]:
        """(Re)start the document's trace after `delay`; anything already pending or running dies. `costs`: the
        worker is asked even for a text the last trace stands for (the classes held without a cost get one)."""
        self.cancel(doc)
        delay = self.debounce if delay is None else delay
        doc.task = asyncio.create_task(self._run(doc, delay, full, costs), name=f"fxlens trace {doc.uri}")
        return doc.task

    def cancel(self, doc: Document) -> None:
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        doc.task = None

    async def trace_now(self, doc: Document, full: bool = True) -> None:
        self.schedule(doc, delay=0.0, full=full)
        await self.settled(doc)  # an edit meanwhile replaces the task: wait for the newest

    async def settled(self, doc: Document) -> None:
        """Wait until the document has no trace pending (returns at once if none is)."""
        while doc.task is not None and not doc.task.done():
            await asyncio.gather(doc.task, return_exceptions=True)

    # -- one trace -------------------------------------------------------------------------------

    async def _run(self, doc: Document, delay: float, full: bool, costs: bool = False) -> None:
        if delay:
            await asyncio.sleep(delay)
        options = self.options()
        if options.execution == "off":
            return  # the user turned execution off (untrusted workspace): nothing runs, nothing to show
        try:
            client = await self.supervisor.get()
        except WorkerUnavailable as error:
            self.hooks.unavailable(doc, error)
            return
        version, text, good = doc.version, doc.text, doc.good
        around = self.workspace_context(doc)
        if (
            not full
            and not costs
            and good is not None
            and good.workspace_context == around.key
            and not needs_trace(good, text, options, doc.outline_of)
        ):
            doc.finish(reuse(good, version, text, doc.line_map))
            self.hooks.finished(doc)
            return
        self.active += 1
        self.traces_started += 1

        def on_class(report: ClassReport) -> None:
            before = doc.partial.get(report.name) if doc.partial_text == text else None
            arrived = [level for level in report.levels if before is None or level not in before.levels]
            doc.add_partial(text, self.attach(doc, report, text))
            self.hooks.class_done(doc, report, arrived)

        # costs come after the report (worker/analysis: counting FLOPs never delays a result); one that comes
        # before this task has put the report in the document waits here for it
        early: list[tuple[str, str | None, Cost]] | None = []

        def on_cost(name: str, fingerprint: str | None, cost: Cost) -> None:
            if early is not None:
                early.append((name, fingerprint, cost))
            else:
                self._add_costs(doc, text, [(name, fingerprint, cost)])

        def on_costs_end() -> None:
            # (after this task, which may still be putting the report in the document: it is the one to cancel)
            asyncio.get_running_loop().call_soon(self._costs_missing, doc, text)

        try:
            # the request goes out first: the worker starts while the editor is told
            ask = TraceAsk(
                first=doc.class_at(doc.cursor_line),
                known={} if full else known_fingerprints(good, options),
                roots=list(around.roots),
                buffers=dict(around.buffers),
                without_cost=[] if full else classes_without_cost(good, options),
            )
            listeners = Listeners(on_class, lambda levels: self.hooks.stage_done(doc, levels), on_cost, on_costs_end)
            trace = client.submit(doc.path, text, options, ask, listeners)
            self.hooks.busy(self.active)
            self.hooks.started(doc)
            report = await trace
        except WorkerUnavailable as error:
            self.hooks.unavailable(doc, error)
            return
        finally:
            self.active -= 1
            self.hooks.busy(self.active)
            self.hooks.ended(doc)
        report.classes = [self.attach(doc, c, text) for c in report.classes]
        doc.finish(merge(good, Traced(version, text, report, options, around.key), doc.line_map))
        self.hooks.finished(doc)
        arrived, early = early, None
        if arrived:
            self._add_costs(doc, text, arrived)

    def _costs_missing(self, doc: Document, text: str) -> None:
        """The costs of a trace of `text` are over: classes held for that text still without one (the worker
        stopped counting them for a trace that needed its place, or at the time limit) are counted again,
        untraced, unless an edit or another trace came since (that one counts them)."""
        # (no task: the document was closed, or its trace cancelled)
        if doc.text != text or doc.task is None or not doc.task.done():
            return
        if not classes_without_cost(doc.good, self.options()):
            return
        version, tried = self._cost_retries.get(doc.uri, (doc.version, 0))
        tried = tried if version == doc.version else 0
        if tried < MAX_COST_RETRIES:
            self._cost_retries[doc.uri] = (doc.version, tried + 1)
            self.schedule(doc, delay=0.0, costs=True)

    def _add_costs(self, doc: Document, text: str, costs: list[tuple[str, str | None, Cost]]) -> None:
        """Costs counted for a trace of `text` join the classes held (the editor's lens refreshes)."""
        by_name = {name: (fingerprint, cost) for name, fingerprint, cost in costs}

        def update(cls: ClassReport, held: str) -> ClassReport:
            found = by_name.get(cls.name)
            return cls if found is None else with_cost(cls, held, text, cls.name, *found)

        doc.update_classes(update)
        self.hooks.costs_done(doc, list(by_name))

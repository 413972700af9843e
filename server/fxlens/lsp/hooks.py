"""What the editor hears when the engine moves: status, progress, diagnostics, refreshes, reportChanged."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.documents import Document
from fxlens.engine.worker_client import WorkerUnavailable
from fxlens.lsp import diagnostics
from fxlens.report import ClassReport, Diagnostic

if TYPE_CHECKING:
    from concurrent.futures import Future

    from fxlens.lsp.server import FxlensServer

# a `workspace/*/refresh` request to the client (no params): its response, when it comes
RefreshRequest = Callable[[None], "Future[None]"]

PROGRESS_AFTER_SECONDS = 0.5
# {uri, version, complete, className, levels[, cost]}: the client's graph view re-renders. `levels`: those
# that just arrived for `className`; with none, every class of the file being traced now has them (the
# cheap ones, or at `complete` all asked for); `cost: true` (complete false, no levels): the cost of
# `className` (or of several classes, className null) came, counted after the trace
REPORT_CHANGED = "fxlens/reportChanged"
STATUS = "fxlens/status"  # {state: idle | tracing | error, message}: for a status bar


class TraceProgress:
    """`$/progress` for traces that take longer than half a second, if the client can show it.

    Each trace of a document is numbered; a progress belongs to the trace it was begun for. The client makes
    the token in a round trip, during which that trace may end or another start: whichever way, a progress
    whose trace is over is ended as soon as it has begun, so none is left spinning."""

    def __init__(self, ls: FxlensServer) -> None:
        self.ls = ls
        self._ids = itertools.count(1)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._traces: dict[str, int] = {}  # uri -> the number of its trace in flight
        self._tokens: dict[str, str] = {}  # uri -> the progress begun for that trace

    def started(self, doc: Document) -> None:
        self.ended(doc)
        if not self.ls.capability("window", "work_done_progress"):
            return
        trace = self._traces[doc.uri] = next(self._ids)
        loop = asyncio.get_running_loop()
        self._timers[doc.uri] = loop.call_later(
            PROGRESS_AFTER_SECONDS, lambda: asyncio.ensure_future(self._begin(doc, trace))
        )

    async def _begin(self, doc: Document, trace: int) -> None:
        if self._traces.get(doc.uri) != trace:
            return  # it ended before its half second was over
        token = f"fxlens-trace-{trace}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception as error:  # noqa: BLE001  the client refused the token: no progress, tracing goes on
            self.ls.window_log_message(types.LogMessageParams(types.MessageType.Log, f"no progress: {error}"))
            return
        name = doc.path.rsplit("/", 1)[-1]
        self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="fxlens", message=f"tracing {name}"))
        if self._traces.get(doc.uri) == trace:
            self._tokens[doc.uri] = token
        else:  # the trace ended (or another began) while the client was making the token
            self._end(token)

    def class_done(self, doc: Document, report: ClassReport) -> None:
        token = self._tokens.get(doc.uri)
        if token is not None:
            levels = ", ".join(report.levels)
            self.ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=f"{report.name}: {levels}"))

    def ended(self, doc: Document) -> None:
        timer = self._timers.pop(doc.uri, None)
        if timer is not None:
            timer.cancel()
        self._traces.pop(doc.uri, None)
        token = self._tokens.pop(doc.uri, None)
        if token is not None:
            self._end(token)

    def _end(self, token: str) -> None:
        self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


class EditorHooks:
    def __init__(self, ls: FxlensServer) -> None:
        self.ls = ls
        self.progress = TraceProgress(ls)
        self.worker: tuple[str, str] = ("starting", "")
        self.active = 0
        self._shown: set[str] = set()
        self._refreshing: dict[str, bool] = {}  # kind -> another refresh is due once this one is answered

    # -- worker and status -----------------------------------------------------------------------

    def worker_state(self, state: str, message: str) -> None:
        self.worker = (state, message)
        if state == "error" and message not in self._shown:
            self._shown.add(message)  # once per distinct problem: no storm of popups
            self.ls.warn(message, types.MessageType.Error)
        self.status()

    def forget_errors(self) -> None:
        self._shown.clear()

    def status(self) -> None:
        state, message = self.worker
        if state == "error":
            payload = {"state": "error", "message": message}
        elif self.ls.settings.execution == "off":
            payload = {"state": "idle", "message": "fxlens.execution is off: no code runs, nothing is traced"}
        elif self.active:
            payload = {"state": "tracing", "message": f"tracing {self.active} file(s)"}
        else:
            payload = {"state": "idle", "message": message if state == "starting" else "ready"}
        self.ls.notify(STATUS, payload)

    # -- the scheduler's hooks -------------------------------------------------------------------

    def busy(self, active: int) -> None:
        self.active = active
        self.ls.on_demand.busy(active)
        self.status()

    def started(self, doc: Document) -> None:
        self.progress.started(doc)
        if doc.last is not None:
            diagnostics.publish(self.ls, doc)  # the old ones, shifted to the text being traced

    def class_done(self, doc: Document, report: ClassReport, levels: list[str]) -> None:
        self.progress.class_done(doc, report)
        self._log_tracebacks(
            doc, [d for level in levels if level in report.levels for d in report.levels[level].diagnostics]
        )
        self._changed(doc, complete=False, cls=report.name, levels=levels)

    def stage_done(self, doc: Document, levels: list[str]) -> None:
        # the cheap levels of every class are in: their diagnostics need not wait for the deeper ones
        diagnostics.publish(self.ls, doc)
        self._changed(doc, complete=False, levels=levels)

    def costs_done(self, doc: Document, names: list[str]) -> None:
        """Class costs (counted after the trace's `done`) joined the report: the lens shows the FLOPs. Not
        `complete`: that means a trace ended, once per trace (clients wait for it)."""
        self._changed(doc, complete=False, cls=names[0] if len(names) == 1 else None, levels=[], cost=True)

    def levels_added(self, doc: Document, name: str, levels: list[str]) -> None:
        """Levels computed on demand joined the report (the file's trace was complete before)."""
        cls = doc.view().report.find_class(name)
        if cls is not None:
            self._log_tracebacks(
                doc, [d for level in levels if level in cls.levels for d in cls.levels[level].diagnostics]
            )
        diagnostics.publish(self.ls, doc)
        self._changed(doc, complete=True, cls=name, levels=levels)

    def ended(self, doc: Document) -> None:
        self.progress.ended(doc)

    def finished(self, doc: Document) -> None:
        if doc.last is not None:  # a file's own diagnostics: an analysis that ended before its classes did
            self._log_tracebacks(doc, doc.last.report.diagnostics)
        diagnostics.publish(self.ls, doc)
        self._changed(doc, complete=True, levels=list(self.ls.settings.levels))

    def unavailable(self, doc: Document, error: WorkerUnavailable) -> None:
        state, _ = self.worker
        if state != "error":
            self.ls.window_log_message(
                types.LogMessageParams(types.MessageType.Warning, f"fxlens: {doc.uri} not traced: {error.message}")
            )

    def _log_tracebacks(self, doc: Document, found: list[Diagnostic]) -> None:
        """fxlens's own failures go to the server log whole, traceback included: what a bug report needs."""
        for d in found:
            if d.traceback:
                where = ", ".join(part for part in (d.class_name, d.level) if part)
                text = f"fxlens: internal error in {doc.path}:{d.line}" + (f" ({where})" if where else "")
                self.ls.window_log_message(
                    types.LogMessageParams(types.MessageType.Error, f"{text}: {d.message}\n{d.traceback.rstrip()}")
                )

    # -- refreshes -------------------------------------------------------------------------------

    def _changed(
        self, doc: Document, complete: bool, levels: list[str], cls: str | None = None, cost: bool = False
    ) -> None:
        # `complete`: the whole file is traced (false while classes stream in one by one); `cost`: what
        # changed is the classes' cost (levels empty), counted after the trace
        self.ls.notify(
            REPORT_CHANGED,
            {
                "uri": doc.uri,
                "version": doc.version,
                "complete": complete,
                "className": cls,
                "levels": levels,
                **({"cost": True} if cost else {}),
            },
        )
        book = self.ls.notebooks.of_document(doc)
        if book is not None:  # a graph view shows a notebook's class for the cell that defines it
            cells = {cell.uri for c in doc.view().report.classes if (cell := book.module.cell_at(c.line))}
            for uri in sorted(cells):
                self.ls.notify(
                    REPORT_CHANGED,
                    {
                        "uri": uri,
                        "version": doc.version,
                        "complete": complete,
                        "className": cls,
                        "levels": levels,
                        **({"cost": True} if cost else {}),
                    },
                )
        if self.ls.capability("workspace", "code_lens", "refresh_support"):
            self._refresh("lens", self.ls.workspace_code_lens_refresh)
        if self.ls.settings.inlay_hints:
            self.refresh_inlays()

    def refresh_inlays(self) -> None:
        if self.ls.capability("workspace", "inlay_hint", "refresh_support"):
            self._refresh("inlay", self.ls.workspace_inlay_hint_refresh)

    def _refresh(self, kind: str, send: RefreshRequest) -> None:
        # Classes stream in one level at a time: while a refresh is unanswered, further ones fold
        # into a single follow-up instead of a request per class.
        if kind in self._refreshing:
            self._refreshing[kind] = True
            return
        self._refreshing[kind] = False

        def answered(_: object) -> None:  # on an error response too, so refreshes never stall
            if self._refreshing.pop(kind, False):
                self._refresh(kind, send)

        send(None).add_done_callback(answered)

"""The server side of the worker: start it (worker_start.py), send requests, collect reports."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from fxlens import messages, orphans
from fxlens.engine.late_costs import LateCosts
from fxlens.engine.quarantine import Quarantine
from fxlens.engine.sent_texts import SentTexts
from fxlens.engine.trace_options import Listeners, OnClass, OnStage, TraceAsk, TraceOptions, trace_request
from fxlens.engine.worker_start import WorkerUnavailable, exit_words, handshake, launch
from fxlens.pass_report import PassReport
from fxlens.report import ClassReport, FileReport, cost_from_json, ladder_sorted

__all__ = ["Listeners", "TraceAsk", "TraceOptions", "WorkerClient", "WorkerProtocolError", "WorkerUnavailable"]


class WorkerProtocolError(WorkerUnavailable):
    """The worker answered a request with a message this server cannot read (messages.ProtocolError)."""


# a pending request: its future, its class callback, its classes so far
Pending = tuple[asyncio.Future[FileReport], OnClass | None, dict[str, ClassReport]]


class WorkerClient:
    def __init__(
        self,
        python: str = sys.executable,
        on_exit: Callable[[int], None] | None = None,
        quarantine: Quarantine | None = None,
    ) -> None:
        self.python = python
        self.on_exit = on_exit
        # shared by the workers a supervisor starts one after another: which files kill them
        self.quarantine = quarantine or Quarantine()
        self._requests: dict[int, tuple[str, str]] = {}  # job id -> (path, text) of the traces sent
        # traces waiting for a suspect's trace to end (or to run alone)
        self._deferred: list[tuple[int, messages.TraceRequest]] = []
        self.lost: list[tuple[str, str]] = []  # the traces in flight when this worker died
        self.process: asyncio.subprocess.Process | None = None
        self.info: messages.Ready | None = None
        self._ids = itertools.count(1)
        # job id -> (its future, its callback, its classes so far)
        self._pending: dict[int, Pending] = {}
        self._passes: dict[int, PassReport] = {}  # job id -> what its graph pass found
        self._on_stage: dict[int, OnStage] = {}
        # who hears the costs counted after a request's `done`; without a listener the request's result
        # waits for them instead (job id -> the report held until the worker's `end`)
        self._on_cost = LateCosts(lambda line: self.stderr_lines.append(line))
        self._costing: dict[int, FileReport] = {}
        self._texts = SentTexts(self._write)  # the buffer texts this worker holds: each version sent once
        # job id -> its request, texts inline (sent so if the worker lost them)
        self._sent: dict[int, messages.TraceRequest] = {}
        # (each handler takes its own event class: Any, as one table holds them all)
        self._handlers: dict[type, Callable[[int, Pending, Any], None]] = {
            messages.UnknownText: self._on_unknown_text,
            messages.ClassCost: self._on_held_cost,
            messages.End: self._on_end,
            messages.Cancelled: self._on_end,
            messages.ClassTraced: self._on_class,
            messages.PassDone: self._on_pass,
            messages.Stage: self._on_stage_event,
            messages.Done: self._on_done,
            messages.RequestError: self._on_request_error,
        }
        self._reader: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self.stderr_lines: list[str] = []

    async def start(self) -> messages.Ready:
        self.process = await launch(self.python)
        self._stderr = asyncio.create_task(self._drain_stderr())
        self.info = await handshake(self.process, self.python, self.stderr_lines)
        self._reader = asyncio.create_task(self._read_events())
        return self.info

    async def _drain_stderr(self) -> None:
        assert self.process and self.process.stderr
        async for raw in self.process.stderr:
            self.stderr_lines.append(raw.decode(errors="replace").rstrip())
            del self.stderr_lines[:-200]

    async def _read_events(self) -> None:
        assert self.process and self.process.stdout
        try:
            while True:
                try:
                    raw = await self.process.stdout.readline()
                except ValueError:  # over LINE_LIMIT (asyncio dropped it): that request's error, not the reader's
                    self.stderr_lines.append("a worker message over the line limit was dropped")
                    continue
                if not raw:
                    break
                self._dispatch(raw)
        except asyncio.CancelledError:
            # the server's loop is closing (the editor went away without `shutdown`): a worker nobody
            # reads from must not be waited for, alive
            if self.process.returncode is None:
                self.process.kill()
            raise
        finally:
            code = await self.process.wait()
            # a worker that was killed (a trace's shell, the system) handed its trace children, and what they
            # started, up to this process when this process adopts orphans (cli.main): they end here
            orphans.end_adopted_from_other_sessions()
            self.lost = [
                self._requests[i] for i, (f, _, _) in self._pending.items() if i in self._requests and not f.done()
            ]
            if self.lost:
                self.quarantine.record_death(self.lost, exit_words(code))
            self._on_cost.clear()
            for job_id, (future, _, _) in self._pending.items():
                if future.done():
                    continue
                if job_id in self._costing:  # its report came; only some costs did not
                    future.set_result(self._costing.pop(job_id))
                    continue
                held = self.quarantine.report_for(*self._requests[job_id]) if job_id in self._requests else None
                if held is not None:
                    # no trace that ended: `_result` must not clear the death count the held report is made from
                    self._requests.pop(job_id, None)
                    future.set_result(held)
                else:
                    future.set_exception(WorkerUnavailable(exit_words(code)))
            self._deferred.clear()
            if self.on_exit is not None:
                self.on_exit(code)

    def _dispatch(self, raw: bytes) -> None:
        """One event from the worker; a bad one fails its own request, never the reader."""
        try:
            event = messages.decode_event(raw)
        except messages.ProtocolError as error:
            self._protocol_error(error, raw)
            return
        job_id = getattr(event, "id", None)
        entry = self._pending.get(job_id) if isinstance(job_id, int) else None
        if not isinstance(job_id, int) or entry is None or (entry[0].done() and self._on_cost.listening(job_id)):
            # a request already answered: its costs and their `end` (read, on a loaded machine, in one go with
            # its `done`, before the result has been taken)
            self._on_cost.heard(event)
            if isinstance(event, messages.RequestError):
                self.stderr_lines.append(f"worker protocol error: {event.message}")
            return
        handler = self._handlers.get(type(event))
        try:
            if handler is not None:
                handler(job_id, entry, event)
        except Exception as error:  # noqa: BLE001  a malformed report or a failing callback: that request's error
            if not entry[0].done():
                entry[0].set_exception(error)

    def _protocol_error(self, error: messages.ProtocolError, raw: bytes) -> None:
        """A line that is no event of this protocol: logged; a request whose answer it was fails with it (a class
        event's is skipped: the trace still reports)."""
        self.stderr_lines.append(f"worker protocol error: {error.problem}: {raw[:200]!r}")
        entry = self._pending.get(error.job_id) if error.job_id is not None else None
        if entry is None or error.kind == messages.ClassTraced.KIND or entry[0].done():
            return
        entry[0].set_exception(
            WorkerProtocolError(
                f"fxlens's worker sent a message this server cannot read ({error.problem})",
                "Reinstall fxlens, then restart it.",
            )
        )

    def _on_unknown_text(self, job_id: int, entry: Pending, event: messages.UnknownText) -> None:
        if job_id in self._sent:
            self._texts.forget(event.keys)
            self._send(self._sent[job_id])  # this once with its texts in it

    def _on_held_cost(self, job_id: int, entry: Pending, event: messages.ClassCost) -> None:
        """A cost of a report held until its costs are in (nobody listens for them as they come)."""
        cls = entry[2].get(event.class_name)
        if job_id in self._costing and cls is not None:  # (the report waiting for its costs, not yet anybody's)
            cls.cost = cost_from_json(event.cost)

    def _on_end(self, job_id: int, entry: Pending, event: messages.End | messages.Cancelled) -> None:
        if job_id in self._costing:
            entry[0].set_result(self._costing.pop(job_id))

    def _on_class(self, job_id: int, entry: Pending, event: messages.ClassTraced) -> None:
        # each event carries the levels finished since the last one for that class
        _, on_class, classes = entry
        try:
            fresh = event.read()
        except (KeyError, TypeError, ValueError, AttributeError):
            # (user code writing to the trace's channel: the worker relays class events unparsed)
            self.stderr_lines.append(f"a class event the server cannot read was skipped: {str(event.report)[:200]!r}")
            return
        earlier = classes.get(fresh.name)
        if earlier is not None:
            fresh.levels = ladder_sorted({**earlier.levels, **fresh.levels})
            fresh.fixes = fresh.fixes or earlier.fixes  # (proven once every level is out: the class's last event)
        classes[fresh.name] = fresh
        if on_class is not None:
            on_class(fresh)

    def _on_pass(self, job_id: int, entry: Pending, event: messages.PassDone) -> None:
        self._passes[job_id] = event.read()

    def _on_stage_event(self, job_id: int, entry: Pending, event: messages.Stage) -> None:
        if job_id in self._on_stage:
            self._on_stage[job_id](event.levels)

    def _on_done(self, job_id: int, entry: Pending, event: messages.Done) -> None:
        future, _, classes = entry
        if future.done():
            return
        # `done` is the file-level part: the classes came one event at a time
        report = event.read()
        report.classes = list(classes.values())
        if event.costs:  # the classes' costs follow, then `end`
            if self._on_cost.listening(job_id):
                future.set_result(report)
            else:
                self._costing[job_id] = report
            return
        self._on_cost.drop(job_id)
        future.set_result(report)

    def _on_request_error(self, job_id: int, entry: Pending, event: messages.RequestError) -> None:
        self.stderr_lines.append(f"worker protocol error: {event.message}")
        if not entry[0].done():
            entry[0].set_exception(
                WorkerProtocolError(
                    f"fxlens's worker could not read a request ({event.message})", "Reinstall fxlens, then restart it."
                )
            )

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def _send(self, message: messages.Request) -> None:
        self._write(messages.encode(message).encode())

    def _write(self, data: bytes) -> None:
        if not self.alive:
            raise WorkerUnavailable("the worker is not running")
        assert self.process and self.process.stdin
        self.process.stdin.write(data)

    def submit(
        self,
        path: str,
        text: str,
        options: TraceOptions,
        ask: TraceAsk | None = None,
        listeners: Listeners | None = None,
    ) -> Awaitable[FileReport]:
        """Send a trace request at once; awaiting the result gives the report, and cancelling that
        await kills the trace in flight.

        `ask.known`: class name -> fingerprint of a trace the caller holds; such a class whose fingerprint is
        unchanged is not traced again but listed in the report's `unchanged`. `ask.roots`: folders to make
        importable (workspace folders; their `src/` too). `ask.buffers`: path -> text of other open
        buffers, imported instead of those files on disk. `listeners.on_stage`: told when every class has its
        cheap levels (the deeper ones asked for follow). `ask.notes`: False when the caller holds the
        classes' cheap levels and asks for deeper ones only (the hints on how a class was built are
        not repeated on them).

        The classes' costs (`options.cost`) are counted after the file's report: with `listeners.on_cost`, the
        result comes at the report and each cost goes to `on_cost` when it comes (an earlier request's costs
        for the same path, if still coming, are given up: `ask.without_cost` names the classes held unchanged
        whose cost never came, counted again); without, the result waits for the costs."""
        ask, listeners = ask or TraceAsk(), listeners or Listeners()
        request = trace_request(path, text, options, ask)
        if listeners.on_cost is not None:
            for earlier in self._on_cost.give_up(request.path):
                if self.alive:
                    self._send(messages.Cancel(earlier))
        job_id, result = self._start_job(request, listeners.on_class)
        if listeners.on_stage is not None:
            self._on_stage[job_id] = listeners.on_stage
        # (not a quarantined file's held report)
        if listeners.on_cost is not None and options.cost and job_id in self._pending:
            self._on_cost.listen(job_id, request.path, listeners.on_cost, listeners.on_costs_end)
        return result

    def _start_job(self, request: messages.TraceRequest, on_class: OnClass | None) -> tuple[int, Awaitable[FileReport]]:
        job_id = next(self._ids)
        future: asyncio.Future[FileReport] = asyncio.get_running_loop().create_future()
        message = replace(request, id=job_id)
        held = self.quarantine.report_for(message.path, message.text or "")
        if held is not None:
            future.set_result(held)
            return job_id, self._result(job_id, future)
        if not self.alive:
            raise WorkerUnavailable("the worker is not running")
        self._pending[job_id] = (future, on_class, {})
        self._deferred.append((job_id, message))
        self._send_deferred()
        return job_id, self._result(job_id, future)

    async def run_pass(
        self,
        path: str,
        text: str,
        options: TraceOptions,
        class_name: str,
        pass_request: messages.PassRequest,
        roots: list[str] | None = None,
        buffers: dict[str, str] | None = None,
    ) -> tuple[FileReport, PassReport | None]:
        """Build `class_name` of the buffer and run one graph pass on it (worker/passes/runner.py), in a
        trace child like any trace. The PassReport is None when the child died first (the file report's
        diagnostics say why) or the class is not a Module class of the file."""
        ask = TraceAsk(classes=[class_name], roots=roots or [], buffers=buffers or {})
        request = replace(trace_request(path, text, options, ask), levels=["fx"], pass_request=pass_request)
        job_id, result = self._start_job(request, None)
        try:
            report = await result
        finally:
            found = self._passes.pop(job_id, None)
        return report, found

    def _send_deferred(self) -> None:
        """Send the waiting traces in order; a suspect's trace (see quarantine.py) runs alone."""
        while self._deferred and self.alive:
            job_id, message = self._deferred[0]
            alone = self.quarantine.runs_alone(message.path)
            in_flight = [p for i, (p, _) in self._requests.items() if i in self._pending]
            if in_flight and (alone or any(self.quarantine.runs_alone(p) for p in in_flight)):
                return
            self._deferred.pop(0)
            self._requests[job_id] = (message.path, message.text or "")
            self._sent[job_id] = message
            self._send(self._texts.keyed(message))

    async def _result(self, job_id: int, future: asyncio.Future[FileReport]) -> FileReport:
        try:
            report = await future
            if job_id in self._requests:
                self.quarantine.traced(self._requests[job_id][0])
            return report
        except asyncio.CancelledError:
            waiting = [entry for entry in self._deferred if entry[0] == job_id]
            for entry in waiting:
                self._deferred.remove(entry)
            if self.alive and not waiting:
                self._send(messages.Cancel(job_id))
            raise
        finally:
            self._pending.pop(job_id, None)
            self._costing.pop(job_id, None)
            self._sent.pop(job_id, None)
            if not future.done() or future.cancelled():
                self._on_cost.drop(job_id)  # (a cancelled trace's costs never come)
            self._requests.pop(job_id, None)
            self._send_deferred()
            self._on_stage.pop(job_id, None)

    async def analyse(
        self,
        path: str,
        text: str,
        options: TraceOptions,
        classes: list[str] | None = None,
        known: dict[str, str] | None = None,
        roots: list[str] | None = None,
        buffers: dict[str, str] | None = None,
    ) -> FileReport:
        """The report for one buffer (see `submit`)."""
        return await self.submit(
            path, text, options, TraceAsk(classes=classes, known=known or {}, roots=roots or [], buffers=buffers or {})
        )

    async def stop(self) -> None:
        if self.alive:
            assert self.process and self.process.stdin
            try:
                self._send(messages.Shutdown())
                self.process.stdin.close()
                await asyncio.wait_for(self.process.wait(), 5)
            except (asyncio.TimeoutError, ConnectionError, WorkerUnavailable):
                self.process.kill()
                await self.process.wait()
        for task in (self._reader, self._stderr):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

"""Graph passes from the editor: run one on a class through the worker, remember it, and run it again
(debounced, like traces) while the user edits the pass's file, keeping its diagnostics for that file.

Server side: never imports torch; the pass runs in a trace child of the worker (worker/passes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from fxlens.engine.documents import Document, WorkspaceContext
from fxlens.engine.scheduler import DEBOUNCE_SECONDS  # a pass re-runs on the traces' rhythm
from fxlens.engine.supervisor import Supervisor
from fxlens.engine.worker_client import TraceOptions, WorkerUnavailable
from fxlens.messages import PassRequest
from fxlens.pass_report import PassReport
from fxlens.report import Diagnostic, FileReport


@dataclass(frozen=True)
class PassRun:
    """One pass on one class: what a re-run repeats."""

    model: Document
    class_name: str
    pass_name: str
    kind: str  # "builtin" | "user"
    pass_doc: Document | None = None  # a user pass: the open document that defines it


@dataclass
class Outcome:
    run: PassRun
    file: FileReport | None
    report: PassReport | None
    error: str = ""  # the worker could not run it at all


OnOutcome = Callable[[Outcome], None]


class PassRuns:
    def __init__(
        self,
        supervisor: Supervisor,
        options: Callable[[], TraceOptions],
        workspace_context: Callable[[Document], WorkspaceContext],
        on_outcome: OnOutcome,
        debounce: float = DEBOUNCE_SECONDS,
    ) -> None:
        self.supervisor = supervisor
        self.options = options
        self.workspace_context = workspace_context
        self.on_outcome = on_outcome
        self.debounce = debounce
        self.last: dict[str, PassRun] = {}  # pass file path -> the last run of a pass it defines
        self.found: dict[str, list[Diagnostic]] = {}  # pass file path -> that run's diagnostics
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.outcomes: dict[str, Outcome] = {}  # pass file path -> the last outcome (for tests, debugInfo)

    def diagnostics(self, path: str) -> list[Diagnostic]:
        return self.found.get(path, [])

    async def run(self, run: PassRun) -> Outcome:
        pass_doc = run.pass_doc
        request = PassRequest(
            run.pass_name,
            run.kind,
            pass_doc.path if pass_doc is not None else None,
            pass_doc.text if pass_doc is not None else None,
        )
        around = self.workspace_context(run.model)
        try:
            client = await self.supervisor.get()
            file, report = await client.run_pass(
                run.model.path,
                run.model.text,
                self.options(),
                run.class_name,
                request,
                roots=list(around.roots),
                buffers=dict(around.buffers),
            )
        except WorkerUnavailable as error:
            outcome = Outcome(run, None, None, error.message)
        else:
            outcome = Outcome(run, file, report)
        where = run.pass_doc.path if run.pass_doc is not None else run.model.path
        self.last[where] = run
        self.found[where] = list(outcome.report.diagnostics) if outcome.report is not None else []
        self.outcomes[where] = outcome
        self.on_outcome(outcome)
        return outcome

    def edited(self, doc: Document) -> asyncio.Task[None] | None:
        """`doc` changed: if it defines the last pass run from it, run that pass again after the debounce."""
        run = self.last.get(doc.path)
        if run is None or run.kind != "user":
            return None
        previous = self.tasks.pop(doc.path, None)
        if previous is not None and not previous.done():
            previous.cancel()  # cancelling the await kills the run in flight (WorkerClient's contract)
        task = asyncio.create_task(self._later(run), name=f"fxlens pass {run.pass_name}")
        self.tasks[doc.path] = task
        return task

    async def _later(self, run: PassRun) -> None:
        await asyncio.sleep(self.debounce)
        await self.run(run)

    def forget(self, doc: Document) -> None:
        task = self.tasks.pop(doc.path, None)
        if task is not None:
            task.cancel()
        self.found.pop(doc.path, None)
        self.last = {path: run for path, run in self.last.items() if run.model is not doc and run.pass_doc is not doc}

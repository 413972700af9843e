"""What every tool call goes through: the workspace roots a path must be inside, the execution policy, the
one warm worker the engine's supervisor keeps (the language server's, not a tracer of our own), and the
reports of texts already traced.

Errors a tool call can meet become `ToolProblem`s, whose text an agent reads as the tool's error.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from fxlens.ci.cache import workspace_imports
from fxlens.engine.supervisor import Supervisor
from fxlens.engine.worker_client import TraceOptions, WorkerClient, WorkerUnavailable
from fxlens.messages import PassRequest
from fxlens.pass_report import PassReport
from fxlens.report import DEFAULT_LEVELS, FileReport

LOG = logging.getLogger("fxlens.mcp")
_T = TypeVar("_T")
# reports kept for unchanged texts: an agent asks list_modules, then graph, then findings of one file
KEPT_REPORTS = 16


class ToolProblem(Exception):
    """What keeps a tool from answering, in words an agent can act on (the tool call's error text)."""


@dataclass(frozen=True)
class Policy:
    """How the server was started: `fxlens mcp --python --execution --timeout --root`."""

    python: str
    execution: str = "safe"  # safe | full | off, as the editor's fxlens.execution
    timeout: float = 60.0
    roots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # symlinks resolved, so that `root/link -> /elsewhere` cannot lead a path out of the roots
        object.__setattr__(self, "roots", tuple(os.path.realpath(r) for r in self.roots or (os.getcwd(),)))


@dataclass(frozen=True)
class Source:
    """A file a tool was asked about, read from disk: agents edit files, not buffers."""

    path: str  # absolute, symlinks resolved
    text: str
    root: str = ""  # the workspace root it is in

    @cached_property
    def digest(self) -> str:
        """What a kept report of this file depends on: its text and the texts of the workspace files it
        imports, to any depth (`fxlens check`'s cache reads the same), so that an edit of a helper module
        the agent made is traced again."""
        digest = hashlib.sha256(self.text.encode())
        for imported in workspace_imports(self.path, self.root or os.path.dirname(self.path)):
            try:
                with open(imported, "rb") as handle:
                    digest.update(imported.encode() + b"\0" + hashlib.sha256(handle.read()).digest())
            except OSError:
                digest.update(imported.encode() + b"\0gone")
        return digest.hexdigest()


@dataclass
class _Kept:
    path: str
    digest: str
    options: TraceOptions
    classes: tuple[str, ...] | None
    report: FileReport


@dataclass
class Reports:
    """The last reports traced, by file text: a changed file is traced again, an unchanged one is not."""

    kept: list[_Kept] = field(default_factory=list)

    def find(self, source: Source, options: TraceOptions, cls: str | None) -> FileReport | None:
        """A kept report that answers `options`: the same file and imports, surface and policy, every level
        asked for, and the class costs and proven fixes when asked for (a report with more serves one with less)."""
        for entry in reversed(self.kept):
            held = entry.options
            if (
                (entry.path, entry.digest) == (source.path, source.digest)
                and (held.surface, held.execution) == (options.surface, options.execution)
                and set(options.levels) <= set(held.levels)
                and (held.cost or not options.cost)
                and (held.fixes or not options.fixes)
                and (entry.classes is None or (cls is not None and cls in entry.classes))
            ):
                return entry.report
        return None

    def keep(self, source: Source, options: TraceOptions, classes: tuple[str, ...] | None, report: FileReport) -> None:
        self.kept.append(_Kept(source.path, source.digest, options, classes, report))
        del self.kept[:-KEPT_REPORTS]


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Workspace:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.supervisor = Supervisor(on_state=self._worker_state, on_ready=lambda: None)
        self.reports = Reports()

    def start(self) -> None:
        """Start the warm worker now: torch is imported before the first tool call."""
        self.supervisor.start(self.policy.python)

    async def stop(self) -> None:
        await self.supervisor.stop()

    @staticmethod
    def _worker_state(state: str, message: str) -> None:
        # stdout is the protocol's: the worker's state goes to the log (stderr), where clients show it
        LOG.log(logging.WARNING if state == "error" else logging.INFO, "worker %s: %s", state, message)

    def source(self, path: str) -> Source:
        """The file at `path` (relative paths: from the first root), refused outside the workspace roots."""
        if not path.strip():
            raise ToolProblem("`path` is empty: give a Python file of the workspace")
        full = os.path.realpath(os.path.join(self.policy.roots[0], os.path.expanduser(path)))
        if not any(inside(full, root) for root in self.policy.roots):
            raise ToolProblem(
                f"{path} is outside the workspace roots ({', '.join(self.policy.roots)}): fxlens runs only code "
                "of the workspace it was started for; add the folder with `fxlens mcp --root DIR`"
            )
        if not os.path.isfile(full):
            raise ToolProblem(f"no such file: {full}")
        root = next(root for root in self.policy.roots if inside(full, root))
        with open(full, "rb") as handle:
            return Source(full, handle.read().decode("utf-8", errors="replace"), root)

    def options(
        self, levels: tuple[str, ...] = DEFAULT_LEVELS, surface: str = "cli", cost: bool = True
    ) -> TraceOptions:
        return TraceOptions(
            levels=levels, execution=self.policy.execution, timeout=self.policy.timeout, surface=surface, cost=cost
        )

    async def report(self, source: Source, options: TraceOptions, cls: str | None = None) -> FileReport:
        """The file's report with `options.levels` for every class (or only `cls` and what builds it, when
        given), traced by the warm worker unless an unchanged text's report holds them already."""
        held = self.reports.find(source, options, cls)
        if held is not None:
            return held
        classes = (cls,) if cls is not None else None

        def trace(client: WorkerClient) -> Awaitable[FileReport]:
            only = list(classes) if classes else None
            return client.analyse(source.path, source.text, options, classes=only, roots=list(self.policy.roots))

        report = await self._on_worker(source, trace)
        if not stopped(report):  # a hang may have been the machine's load: the next call tries again
            self.reports.keep(source, options, classes, report)
        return report

    async def run_pass(self, source: Source, cls: str, request: PassRequest) -> tuple[FileReport, PassReport | None]:
        def run(client: WorkerClient) -> Awaitable[tuple[FileReport, PassReport | None]]:
            options = self.options(("fx",))
            return client.run_pass(source.path, source.text, options, cls, request, roots=list(self.policy.roots))

        return await self._on_worker(source, run)

    async def _on_worker(self, source: Source, call: Callable[[WorkerClient], Awaitable[_T]]) -> _T:
        """`call` on the warm worker. A worker that dies under it is restarted by the supervisor and the call
        runs once more, as the editor traces a file again: a second death holds the file back (the engine's
        quarantine), whose report says so; a death that was not the file's own answers the second time."""
        client = await self._client()
        try:
            return await call(client)
        except WorkerUnavailable as error:
            if client.alive:  # (the worker answered what it could not read: no death, no second try)
                raise ToolProblem(_stopped_worker(source, error)) from error
            LOG.warning("the worker died while tracing %s (%s): tracing it once more", source.path, error.message)
        try:
            return await call(await self._client())
        except WorkerUnavailable as error:
            raise ToolProblem(_stopped_worker(source, error)) from error

    async def _client(self) -> WorkerClient:
        try:
            return await self.supervisor.get()
        except WorkerUnavailable as error:
            # (the engine's fix names the editor's setting and command: this server's are its flags)
            raise ToolProblem(
                f"{error.message} (fix: start `fxlens mcp --python PATH` with an interpreter that has torch)"
            ) from error


# the categories of a trace that did not end: it hung, crashed, exited or ran out of memory (the worker's
# postmortem); a tool meeting one answers with an error at the line
STOPPED = ("timeout", "crash", "exit", "memory", "interrupt")


def stopped(report: FileReport) -> bool:
    return any(d.severity == "error" and d.category in STOPPED for d in report.all_diagnostics())


def _stopped_worker(source: Source, error: WorkerUnavailable) -> str:
    return f"the worker stopped while tracing {source.path}: {_worker_words(error)}"


def _worker_words(error: WorkerUnavailable) -> str:
    return f"{error.message} (fix: {error.fix})" if error.fix else error.message

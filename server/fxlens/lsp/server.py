"""Wiring: the server object, its lifecycle (initialize, settings, shutdown) and document sync.

Each feature lives in its own module as module-level handlers; `FEATURES` and `COMMANDS` below are the
one place they are registered. The engine (documents, scheduler, supervisor) knows nothing about LSP.
This module never imports torch, and neither does anything it imports: the worker runs torch in another
process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fxlens import __version__ as VERSION
from fxlens.engine.baseline import Baselines
from fxlens.engine.documents import Document, Documents
from fxlens.engine.notebook import Notebooks
from fxlens.engine.on_demand import OnDemand
from fxlens.engine.pass_runs import PassRuns
from fxlens.engine.scheduler import Scheduler
from fxlens.engine.supervisor import Supervisor
from fxlens.engine.worker_client import WorkerUnavailable
from fxlens.lsp import actions, commands, diagnostics, head_lens, hover, inlay, kernel_code, lens, notebooks, passes
from fxlens.lsp.cells import CellCoords
from fxlens.lsp.command_arguments import AsyncCommand, Command
from fxlens.lsp.graph_files import GraphFiles
from fxlens.lsp.hooks import EditorHooks
from fxlens.lsp.positions import Coords
from fxlens.lsp.protocol import FxlensProtocol
from fxlens.lsp.settings import Settings, has_settings, parse_settings, with_root


class FxlensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fxlens", VERSION, protocol_cls=FxlensProtocol, notebook_document_sync=notebooks.SYNC)
        self.settings = Settings()
        self.init_options: Any = None
        self.config_generation = 0
        # the exit status the protocol asks for: 0 only when `shutdown` came before the end
        self.shutdown_requested = False
        self.documents = Documents()
        self.notebooks = Notebooks(self.documents)
        self.baselines = Baselines()  # the last commit's graphs, for the "vs HEAD" lens
        self.graph_files = GraphFiles()  # where a graph or a kernel's code is written for the client to show
        self.hooks = EditorHooks(self)
        self.supervisor = Supervisor(on_state=self.hooks.worker_state, on_ready=self._worker_ready)
        self.scheduler = Scheduler(
            self.supervisor,
            self.hooks,
            lambda: self.settings.trace_options(),
            workspace_context=lambda doc: self.documents.workspace_context(doc, self.roots()),
            attach=lambda doc, report, text: self.on_demand.attach(doc, report, text),
        )
        self.on_demand = OnDemand(self.scheduler, on_levels=self.hooks.levels_added)
        self.pass_runs = PassRuns(
            self.supervisor,
            lambda: self.settings.trace_options(),
            lambda doc: self.documents.workspace_context(doc, self.roots()),
            lambda outcome: passes.published(self, outcome),
        )
        # worker restarts in flight (the event loop holds its tasks weakly: one nobody holds may vanish)
        self._restarts: set[asyncio.Task[None]] = set()

    # -- helpers every feature uses --------------------------------------------------------------

    def coords(self, doc: Document, uri: str | None = None) -> Coords | CellCoords:
        """The converters for the text `uri` names: the document's, or one cell of a notebook's."""
        found = self.notebooks.of_cell(uri) if uri is not None else None
        if found is not None:
            return CellCoords(found[1], self.workspace.position_encoding, found[0].module)
        return Coords(doc.text, self.workspace.position_encoding, doc.lines)

    def document(self, uri: str) -> Document | None:
        """The open document `uri` names; for a notebook cell, its notebook's."""
        found = self.notebooks.of_cell(uri) if uri not in self.documents else None
        return found[0].doc if found is not None else self.documents.get(uri)

    def capability(self, *path: str) -> Any:
        """A client capability by attribute path, None when the client did not say."""
        value: Any = self.client_capabilities
        for name in path:
            value = getattr(value, name, None)
            if value is None:
                return None
        return value

    def roots(self) -> list[str]:
        """The workspace folders (else the root the client gave): importable in every trace."""
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        return [f for f in folders if f] or [p for p in (self.workspace.root_path,) if p]

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.protocol.notify(method, params)

    def warn(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"fxlens: {message}"))

    # -- settings --------------------------------------------------------------------------------

    def parse(self, raw: Any) -> tuple[Settings, list[str]]:
        settings, warnings = parse_settings(raw)
        return with_root(settings, self.workspace.root_path), warnings

    def apply_settings(self, raw: Any) -> None:
        settings, warnings = self.parse(raw)
        for warning in warnings:
            self.warn(warning)
        previous, self.settings = self.settings, settings
        if settings.python != previous.python:
            self.hooks.forget_errors()
            restart = asyncio.ensure_future(self._restart_worker())
            self._restarts.add(restart)
            restart.add_done_callback(self._restarts.discard)
        elif settings.trace_options() != previous.trace_options():
            self.retrace_all()
        if settings.inlay_hints != previous.inlay_hints:
            self.hooks.refresh_inlays()
        if settings.diff_lens != previous.diff_lens:
            head_lens.refresh(self)
        self.hooks.status()

    async def _restart_worker(self) -> None:
        # documents are traced again from `_worker_ready`
        try:
            await self.supervisor.restart(self.settings.python)
        except WorkerUnavailable:
            return  # already reported through worker_state; documents wait for a working interpreter

    def _worker_ready(self) -> None:
        self.retrace_all(only_missing=True)

    def retrace_all(self, only_missing: bool = False) -> None:
        for doc in self.documents:
            # after a (re)start, only what was lost: a trace still waiting for the worker is not
            if only_missing and (doc.tracing or (doc.last is not None and doc.last.version == doc.version)):
                continue
            self.scheduler.schedule(doc, delay=0.0)

    def retrace_neighbours(self, doc: Document) -> None:
        """The other open buffers of `doc`'s workspace may import it: their workers' fingerprints
        decide which of their classes it changes."""
        for other in self.documents.neighbours(doc, self.roots()):
            self.scheduler.schedule(other)


def _initialize(ls: FxlensServer, params: types.InitializeParams) -> None:
    # Start importing torch now: by the time the first file opens the worker is warm.
    ls.init_options = params.initialization_options
    settings, _ = ls.parse(params.initialization_options)
    ls.settings = settings
    ls.supervisor.start(settings.python)


def _initialized(ls: FxlensServer, params: types.InitializedParams) -> None:
    # Warnings wait until now: some clients drop window/showMessage sent during initialize.
    for warning in parse_settings(ls.init_options)[1]:
        ls.warn(warning)
    ls.hooks.status()


async def _did_change_configuration(ls: FxlensServer, params: types.DidChangeConfigurationParams) -> None:
    raw = params.settings
    ls.config_generation += 1
    generation = ls.config_generation
    if not has_settings(raw) and ls.capability("workspace", "configuration"):
        # pull-model clients send an empty notification and expect us to ask
        try:
            items = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="fxlens")])
            )
        except JsonRpcException as error:
            ls.warn(f"could not read the settings from the editor ({error}); keeping the current ones")
            return
        if generation != ls.config_generation:
            return  # a newer notification arrived while we asked: it wins
        raw = {"fxlens": items[0] if items else {}}
    ls.apply_settings(raw)


def _did_open(ls: FxlensServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if ls.notebooks.of_cell(item.uri) is not None:
        return  # a notebook's cell: the notebook's module traces it
    doc = ls.documents.open(item.uri, to_fs_path(item.uri) or item.uri, item.version, item.text)
    ls.scheduler.schedule(doc, delay=0.0)


def _did_change(ls: FxlensServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = ls.document(params.text_document.uri)
    if doc is None:
        return
    source = ls.workspace.get_text_document(doc.uri)  # pygls has applied the (incremental) edits
    doc.edit(params.text_document.version, source.source)
    ls.scheduler.schedule(doc)
    ls.retrace_neighbours(doc)
    ls.pass_runs.edited(doc)  # it defines the pass last run from it: run it again


def _did_save(ls: FxlensServer, params: types.DidSaveTextDocumentParams) -> None:
    doc = ls.document(params.text_document.uri)
    if doc is not None:
        ls.retrace_neighbours(doc)


def _did_close(ls: FxlensServer, params: types.DidCloseTextDocumentParams) -> None:
    doc = ls.documents.close(params.text_document.uri)
    if doc is not None:
        ls.scheduler.cancel(doc)
        ls.pass_runs.forget(doc)
        ls.on_demand.forget(doc)
        ls.hooks.progress.ended(doc)
        diagnostics.clear(ls, doc.uri)
        ls.retrace_neighbours(doc)  # they import the file on disk again


def _did_change_workspace_folders(ls: FxlensServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    ls.retrace_all()  # (pygls has updated the folders: they are the roots every trace imports from)


async def _shutdown(ls: FxlensServer, params: Any) -> None:
    ls.shutdown_requested = True
    for doc in ls.documents:
        ls.scheduler.cancel(doc)
        ls.on_demand.forget(doc)
    await ls.supervisor.stop()


def _features() -> tuple[tuple[str, Any, Callable[..., Any]], ...]:
    """(method, options, handler) for every LSP method the server answers; pygls passes the server to a
    handler whose first parameter is named `ls`. (Made per server: pygls keeps the options, which are mutable.)"""
    return (
        (types.INITIALIZE, None, _initialize),
        (types.INITIALIZED, None, _initialized),
        (types.WORKSPACE_DID_CHANGE_CONFIGURATION, None, _did_change_configuration),
        (types.TEXT_DOCUMENT_DID_OPEN, None, _did_open),
        (types.TEXT_DOCUMENT_DID_CHANGE, None, _did_change),
        (types.TEXT_DOCUMENT_DID_CLOSE, None, _did_close),
        (types.TEXT_DOCUMENT_DID_SAVE, None, _did_save),
        (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, None, _did_change_workspace_folders),
        (types.SHUTDOWN, None, _shutdown),
        (types.NOTEBOOK_DOCUMENT_DID_OPEN, None, notebooks.on_did_open),
        (types.NOTEBOOK_DOCUMENT_DID_CHANGE, None, notebooks.on_did_change),
        (types.NOTEBOOK_DOCUMENT_DID_CLOSE, None, notebooks.on_did_close),
        (types.TEXT_DOCUMENT_HOVER, None, hover.on_hover),
        (types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False), lens.on_code_lens),
        (types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False), inlay.on_inlay_hint),
        (
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(
                code_action_kinds=[
                    types.CodeActionKind.QuickFix,
                    types.CodeActionKind.Refactor,
                    types.CodeActionKind.SourceFixAll,
                ]
            ),
            actions.on_code_action,
        ),
    )


COMMANDS: tuple[Command[Any] | AsyncCommand[Any], ...] = (
    commands.SHOW_GRAPH,
    commands.RETRACE,
    commands.RESTART_WORKER,
    commands.DEBUG_INFO,
    kernel_code.KERNEL_CODE,
    passes.PASS_CHOICES,
    passes.RUN_PASS,
)


def build_server() -> FxlensServer:
    ls = FxlensServer()
    for method, options, handler in _features():
        ls.feature(method, options)(handler)
    for command in COMMANDS:
        ls.command(command.name)(command.handler())
    return ls


def serve(tcp: str | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="fxlens %(levelname)s %(name)s: %(message)s")
    ls = build_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        ls.start_tcp(host or "127.0.0.1", int(port))
    else:
        ls.start_io()  # returns once the client sent `exit` (pygls swallows the SystemExit it raises)
    return 0 if ls.shutdown_requested else 1

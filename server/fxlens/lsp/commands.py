"""workspace/executeCommand: fxlens.showGraph, fxlens.retrace, fxlens.restartWorker, fxlens.debugInfo.

`fxlens.showGraph [uri, className?, level?, toDocument?]` returns the graph payload (see
render/graph_view.py). With `toDocument` true it also writes the text to a read-only file and asks
the client to open it (`window/showDocument`, when the client supports it; the file's URI is in the
result's "document" either way): that is how clients without a graph view show it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fxlens.engine.documents import Document
from fxlens.engine.worker_client import WorkerUnavailable
from fxlens.lsp.cells import CellCoords
from fxlens.lsp.command_arguments import (
    ArgumentError,
    AsyncCommand,
    Command,
    DocumentArguments,
    NoArguments,
    Payload,
    flag_at,
    text_at,
)
from fxlens.render.graph_view import graph_document, graph_payload
from fxlens.report import LEVELS, ClassReport

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer


def _pick_class(doc: Document, name: str | None) -> tuple[ClassReport | None, str]:
    classes = doc.view().report.classes
    if name:
        found = next((c for c in classes if c.name == name), None)
        names = ", ".join(c.name for c in classes) or "none traced yet"
        return found, "" if found else f"no Module class {name!r} in this file (it has: {names})"
    if not classes:
        return None, "no Module class has been traced in this file"
    cursor = doc.cursor_line or 0
    above = [c for c in classes if c.line <= cursor]  # the class at the cursor, or the nearest above it
    return (above[-1] if above else classes[0]), ""


async def _class_with_level(
    ls: FxlensServer, doc: Document, name: str | None, level: str
) -> tuple[ClassReport | None, str]:
    """`_pick_class`'s class, its `level` computed now when the settings did not ask for it."""
    if not doc.view().traced:
        await ls.scheduler.settled(doc)  # first trace still running: the caller asked, so wait for it
    cls, problem = _pick_class(doc, name)
    if cls is not None and level not in cls.levels and level in LEVELS:
        await ls.on_demand.ensure(doc, cls.name, (level,))
        cls, problem = _pick_class(doc, cls.name)
    return cls, problem


async def _show_document(ls: FxlensServer, doc: Document, cls: ClassReport, level: str) -> str:
    """The URI of a new read-only file holding the graph, which the client is asked to show when it can
    be (clients that cannot, Neovim 0.7, open it themselves)."""
    stem = os.path.splitext(os.path.basename(doc.path))[0]
    path = ls.graph_files.write(f"{stem}.{cls.name}.{level}.txt", graph_document(doc.path, cls, level))
    target: str = from_fs_path(path)
    if ls.capability("window", "show_document", "support"):
        await ls.window_show_document_async(types.ShowDocumentParams(uri=target, take_focus=True))
    return target


def _in_cell(ls: FxlensServer, doc: Document, uri: str, cls: ClassReport | None) -> tuple[str, ClassReport | None]:
    """In a notebook, the cell that defines the class and the class in that cell's line numbers, so
    that the graph view's lines (and a click on a node) are the cell's; a file's are unchanged."""
    book = ls.notebooks.of_document(doc)
    if book is None or cls is None:
        return uri, cls
    cell = book.module.cell_at(cls.line)
    if cell is None:
        return uri, cls
    return cell.uri, CellCoords(cell, ls.workspace.position_encoding, book.module).local_class(cls)


@dataclass(frozen=True)
class ShowGraphArguments:
    """`[uri, className?, level?, toDocument?]`: no class is the one at the cursor (else the first)."""

    uri: str
    class_name: str | None
    level: str
    to_document: bool

    @classmethod
    def parse(cls, arguments: Sequence[Any]) -> ShowGraphArguments | ArgumentError:
        uri = text_at(arguments, 0)
        if uri is None:
            return ArgumentError("[uri of an open document, className?, level?, toDocument?]")
        return cls(uri, text_at(arguments, 1), text_at(arguments, 2) or "fx", flag_at(arguments, 3))


async def show_graph(ls: FxlensServer, args: ShowGraphArguments) -> Payload:
    doc = ls.document(args.uri)
    if doc is None:
        return graph_payload(args.uri, None, args.level, f"{args.uri} is not open")
    cls, problem = await _class_with_level(ls, doc, args.class_name, args.level)
    uri, cls = _in_cell(ls, doc, args.uri, cls)
    payload = graph_payload(uri, cls, args.level, problem)
    if cls is not None and args.to_document and payload["levels"]:
        level = args.level if args.level in cls.levels else payload["levels"][0]
        payload["document"] = await _show_document(ls, doc, cls, level)
    return payload


async def retrace(ls: FxlensServer, args: DocumentArguments) -> Payload:
    doc = ls.document(args.uri)
    if doc is None:
        return {"uri": args.uri, "ok": False, "message": "document not open"}
    await ls.scheduler.trace_now(doc, full=True)
    return {
        "uri": doc.uri,
        "ok": doc.last is not None and doc.last.version == doc.version,
        "version": doc.version,
        "classes": [c.name for c in doc.view().report.classes],
    }


async def restart_worker(ls: FxlensServer, args: NoArguments) -> Payload:
    ls.hooks.forget_errors()
    try:
        client = await ls.supervisor.restart(ls.settings.python)
    except WorkerUnavailable as error:
        return {"ok": False, "message": error.message}
    ls.retrace_all()
    info = client.info
    return {"ok": True, "pid": ls.supervisor.pid, "python": info and info.python, "torch": info and info.torch}


def debug_info(ls: FxlensServer, args: NoArguments) -> Payload:
    return {
        "torchImported": "torch" in sys.modules,
        "serverPid": os.getpid(),
        "workerPid": ls.supervisor.pid,
        "workerStarts": ls.supervisor.starts,
        "tracesStarted": ls.scheduler.traces_started,
        "tracing": [d.uri for d in ls.documents if d.tracing],
        "traced": {d.uri: list(d.history) for d in ls.documents},
        # what the last trace traced, and what it kept from the one before (fingerprints unchanged)
        "retraced": {d.uri: _retraced(d) for d in ls.documents},
        "unchanged": {d.uri: d.last.report.unchanged if d.last else None for d in ls.documents},
        # the levels traced on demand (a hover, the graph view), oldest first: {uri, class, levels}
        "onDemand": list(ls.on_demand.requested),
    }


def _retraced(doc: Document) -> list[str] | None:
    if doc.last is None:
        return None
    return [c.name for c in doc.last.report.classes if c.name not in doc.last.report.unchanged]


def _graph_refused(message: str) -> Payload:
    return graph_payload("", None, "fx", message)


def _retrace_refused(message: str) -> Payload:
    return {"uri": None, "ok": False, "message": message}


SHOW_GRAPH = AsyncCommand("fxlens.showGraph", ShowGraphArguments.parse, show_graph, _graph_refused)
RETRACE = AsyncCommand("fxlens.retrace", DocumentArguments.parse, retrace, _retrace_refused)
RESTART_WORKER = AsyncCommand("fxlens.restartWorker", NoArguments.parse, restart_worker)
DEBUG_INFO = Command("fxlens.debugInfo", NoArguments.parse, debug_info)

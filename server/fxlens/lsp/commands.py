"""workspace/executeCommand: fxlens.showGraph, fxlens.retrace, fxlens.restartWorker, fxlens.debugInfo.

`fxlens.showGraph [uri, className?, level?, toDocument?]` returns the graph payload (see
render/graph_view.py). With `toDocument` true it also writes the text to a read-only file and asks
the client to open it (`window/showDocument`, when the client supports it; the file's URI is in the
result's "document" either way): that is how clients without a graph view show it.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Optional

from lsprotocol import types
from pygls.uris import from_fs_path

from fxlens.engine.documents import Document
from fxlens.engine.worker_client import WorkerUnavailable
from fxlens.lsp.cells import CellCoords
from fxlens.lsp.graph_files import GraphFiles
from fxlens.render.graph_view import graph_document, graph_payload
from fxlens.report import LEVELS, ClassReport

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer


def _pick_class(doc: Document, name: Optional[str]) -> tuple[Optional[ClassReport], str]:
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


def _write_graph(files: GraphFiles, doc: Document, cls: ClassReport, level: str) -> str:
    stem = os.path.splitext(os.path.basename(doc.path))[0]
    return files.write(f"{stem}.{cls.name}.{level}.txt", graph_document(doc.path, cls, level))


def _in_cell(ls: "FxlensServer", doc: Document, uri: str,
             cls: Optional[ClassReport]) -> tuple[str, Optional[ClassReport]]:
    """In a notebook, the cell that defines the class and the class in that cell's line numbers, so
    that the graph view's lines (and a click on a node) are the cell's; a file's are unchanged."""
    book = ls.notebooks.of_document(doc)
    cell = book.module.cell_at(cls.line) if book is not None and cls is not None else None
    if cell is None:
        return uri, cls
    return cell.uri, CellCoords(cell, ls.workspace.position_encoding, book.module).local_class(cls)


def _text(args: tuple, index: int) -> Optional[str]:
    """Argument `index` if it is a non-empty string (clients send all sorts), else None."""
    value = args[index] if len(args) > index else None
    return value if isinstance(value, str) and value else None


def register(ls: "FxlensServer") -> None:
    files = GraphFiles()

    @ls.command("fxlens.showGraph")
    async def show_graph(ls, *args: Any) -> dict:
        uri = _text(args, 0) or ""
        level = _text(args, 2) or "fx"
        doc = ls.document(uri)
        if doc is None:
            return graph_payload(uri, None, level, f"{uri or 'that document'} is not open")
        if not doc.view().traced:
            await ls.scheduler.settled(doc)  # first trace still running: the caller asked, so wait for it
        cls, problem = _pick_class(doc, _text(args, 1))
        if cls is not None and level not in cls.levels and level in LEVELS:  # not asked for: computed now
            await ls.on_demand.ensure(doc, cls.name, (level,))
            cls, problem = _pick_class(doc, cls.name)
        uri, cls = _in_cell(ls, doc, uri, cls)
        payload = graph_payload(uri, cls, level, problem)
        if cls is not None and len(args) > 3 and args[3] is True and payload["levels"]:
            target = from_fs_path(_write_graph(files, doc, cls, level if level in cls.levels else payload["levels"][0]))
            payload["document"] = target  # clients that cannot be asked to show it (Neovim 0.7) open it themselves
            if ls.capability("window", "show_document", "support"):
                await ls.window_show_document_async(types.ShowDocumentParams(uri=target, take_focus=True))
        return payload

    @ls.command("fxlens.retrace")
    async def retrace(ls, *args: Any) -> dict:
        doc = ls.document(_text(args, 0) or "")
        if doc is None:
            return {"uri": _text(args, 0), "ok": False, "message": "document not open"}
        await ls.scheduler.trace_now(doc, full=True)
        return {"uri": doc.uri, "ok": doc.last is not None and doc.last.version == doc.version,
                "version": doc.version, "classes": [c.name for c in doc.view().report.classes]}

    @ls.command("fxlens.restartWorker")
    async def restart_worker(ls, *args: Any) -> dict:
        ls.hooks.forget_errors()
        try:
            client = await ls.supervisor.restart(ls.settings.python)
        except WorkerUnavailable as error:
            return {"ok": False, "message": error.message}
        ls.retrace_all()
        info = client.info
        return {"ok": True, "pid": ls.supervisor.pid, "python": info and info.python, "torch": info and info.torch}

    @ls.command("fxlens.debugInfo")
    def debug_info(ls, *args: Any) -> dict:
        return {"torchImported": "torch" in sys.modules, "serverPid": os.getpid(), "workerPid": ls.supervisor.pid,
                "workerStarts": ls.supervisor.starts, "tracesStarted": ls.scheduler.traces_started,
                "tracing": [d.uri for d in ls.documents if d.tracing],
                "traced": {d.uri: list(d.history) for d in ls.documents},
                # what the last trace traced, and what it kept from the one before (fingerprints unchanged)
                "retraced": {d.uri: _retraced(d) for d in ls.documents},
                "unchanged": {d.uri: d.last.report.unchanged if d.last else None for d in ls.documents},
                # the levels traced on demand (a hover, the graph view), oldest first: {uri, class, levels}
                "onDemand": list(ls.on_demand.requested)}


def _retraced(doc: Document) -> Optional[list[str]]:
    if doc.last is None:
        return None
    return [c.name for c in doc.last.report.classes if c.name not in doc.last.report.unchanged]

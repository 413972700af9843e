"""Diagnostics: every problem in the report, at its line, for the document's current text."""
from __future__ import annotations

from typing import TYPE_CHECKING, Union
from urllib.parse import unquote

from lsprotocol import types

from fxlens.engine.documents import Document
from fxlens.engine.notebook import Notebook
from fxlens.lsp.cells import CellCoords
from fxlens.lsp.positions import Coords
from fxlens.report import Diagnostic

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "information": types.DiagnosticSeverity.Information, "hint": types.DiagnosticSeverity.Hint}


def lsp_diagnostic(d: Diagnostic, coords: Union[Coords, CellCoords]) -> types.Diagnostic:
    where = " · ".join(filter(None, [d.class_name, d.level]))
    message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
    return types.Diagnostic(range=coords.lsp_range(d.line, d.col, d.end_line, d.end_col), message=message,
                            severity=SEVERITY.get(d.severity, types.DiagnosticSeverity.Information),
                            code=d.category, source=f"fxlens ({where})" if where else "fxlens")


def publish(ls: "FxlensServer", doc: Document) -> None:
    # The view is already shifted to the current text, so its lines belong to doc.version.
    view = doc.view()
    book = ls.notebooks.of_document(doc)
    if book is not None:
        _publish_cells(ls, book, view.report.all_diagnostics())
        return
    coords = ls.coords(doc)
    items = [lsp_diagnostic(d, coords) for d in [*view.report.all_diagnostics(), *ls.pass_runs.diagnostics(doc.path)]]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=items,
                                                                        version=view.version))


def _publish_cells(ls: "FxlensServer", book: Notebook, items: list[Diagnostic]) -> None:
    """A notebook's diagnostics, each to the cell that holds its line; a cell that left the notebook
    is cleared."""
    per_cell: dict[str, list[types.Diagnostic]] = {cell.uri: [] for cell in book.module.cells}
    for d in items:
        cell = book.module.nearest_cell(d.line)
        if cell is not None:
            coords = CellCoords(cell, ls.workspace.position_encoding, book.module)
            per_cell[cell.uri].append(lsp_diagnostic(coords.local_diagnostic(d), coords))
    for uri in sorted(book.published - per_cell.keys()):
        clear(ls, uri)
    book.published = set(per_cell)
    for uri, found in per_cell.items():
        text = ls.workspace.text_documents.get(unquote(uri))
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=found, version=text.version if text is not None else None))


def clear(ls: "FxlensServer", uri: str) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

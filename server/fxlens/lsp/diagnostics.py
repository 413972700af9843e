"""Diagnostics: every problem in the report, at its line, for the document's current text."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

from fxlens.engine.documents import Document
from fxlens.engine.fixes import explained
from fxlens.engine.notebook import Notebook
from fxlens.lsp.cells import CellCoords
from fxlens.lsp.positions import Coords
from fxlens.render.causes import Cause, merge, related_text
from fxlens.report import Diagnostic

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def lsp_diagnostic(cause: Cause, coords: Coords | CellCoords, uri: str, related: bool = True) -> types.Diagnostic:
    """One cause as one LSP diagnostic: each level's own text in relatedInformation (same file and
    span), or in the message's lines for a client that does not show related information."""
    d = cause.diagnostic
    span = coords.lsp_range(d.line, d.col, d.end_line, d.end_col)
    texts = [related_text(part, len(cause.classes)) for part in cause.parts] if cause.merged else []
    message = "\n".join([d.message, *([] if related else texts)]) + (f"\nfix: {d.fix}" if d.fix else "")
    where = " · ".join(filter(None, [", ".join(cause.classes), ", ".join(cause.levels)]))
    return types.Diagnostic(
        range=span,
        message=message,
        severity=SEVERITY.get(d.severity, types.DiagnosticSeverity.Information),
        code=d.category,
        source=f"fxlens ({where})" if where else "fxlens",
        related_information=[
            types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=span), message=text)
            for text in texts
        ]
        if related and texts
        else None,
    )


def _related(ls: FxlensServer) -> bool:
    return bool(ls.capability("text_document", "publish_diagnostics", "related_information"))


def publish(ls: FxlensServer, doc: Document) -> None:
    # The view is already shifted to the current text, so its lines belong to doc.version.
    view = doc.view()
    # each finding says what its quick fix proved, or why fxlens offers none
    report = explained(view.report)
    book = ls.notebooks.of_document(doc)
    if book is not None:
        _publish_cells(ls, book, report.all_diagnostics())
        return
    coords, related = ls.coords(doc), _related(ls)
    causes = merge([*report.all_diagnostics(), *ls.pass_runs.diagnostics(doc.path)])
    items = [lsp_diagnostic(cause, coords, doc.uri, related) for cause in causes]
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=items, version=view.version)
    )


def _publish_cells(ls: FxlensServer, book: Notebook, items: list[Diagnostic]) -> None:
    """A notebook's diagnostics, each to the cell that holds its line; a cell that left the notebook
    is cleared."""
    per_cell: dict[str, list[types.Diagnostic]] = {cell.uri: [] for cell in book.module.cells}
    related = _related(ls)
    for cause in merge(items):
        cell = book.module.nearest_cell(cause.diagnostic.line)
        if cell is not None:
            coords = CellCoords(cell, ls.workspace.position_encoding, book.module)
            local = Cause(coords.local_diagnostic(cause.diagnostic), tuple(map(coords.local_diagnostic, cause.parts)))
            per_cell[cell.uri].append(lsp_diagnostic(local, coords, cell.uri, related))
    for uri in sorted(book.published - per_cell.keys()):
        clear(ls, uri)
    book.published = set(per_cell)
    for uri, found in per_cell.items():
        text = ls.workspace.text_documents.get(unquote(uri))
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=found, version=text.version if text is not None else None
            )
        )


def clear(ls: FxlensServer, uri: str) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

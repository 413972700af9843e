"""Diagnostics: every problem in the report, at its line, for the document's current text."""
from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.documents import Document
from fxlens.lsp.positions import Coords
from fxlens.report import Diagnostic

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "information": types.DiagnosticSeverity.Information, "hint": types.DiagnosticSeverity.Hint}


def lsp_diagnostic(d: Diagnostic, coords: Coords) -> types.Diagnostic:
    where = " · ".join(filter(None, [d.class_name, d.level]))
    message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
    return types.Diagnostic(range=coords.lsp_range(d.line, d.col, d.end_line, d.end_col), message=message,
                            severity=SEVERITY.get(d.severity, types.DiagnosticSeverity.Information),
                            code=d.category, source=f"fxlens ({where})" if where else "fxlens")


def publish(ls: "FxlensServer", doc: Document) -> None:
    # The view is already shifted to the current text, so its lines belong to doc.version.
    view = doc.view()
    coords = ls.coords(doc)
    items = [lsp_diagnostic(d, coords) for d in [*view.report.all_diagnostics(), *ls.pass_runs.diagnostics(doc.path)]]
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=items,
                                                                        version=view.version))


def clear(ls: "FxlensServer", uri: str) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

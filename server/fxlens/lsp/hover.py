"""textDocument/hover: what fxlens knows about the line under the cursor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.lsp.cells import CellCoords
from fxlens.render.hover import execution_off_text, hover_text

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.positions import Coords
    from fxlens.lsp.server import FxlensServer


def _markdown(ls: FxlensServer) -> bool:
    formats = ls.capability("text_document", "hover", "content_format")
    return formats is None or types.MarkupKind.Markdown in formats


def on_hover(ls: FxlensServer, params: types.HoverParams) -> types.Hover | None:
    doc = ls.document(params.text_document.uri)
    if doc is None:
        return None
    coords = ls.coords(doc, params.text_document.uri)
    markdown = _markdown(ls)
    text = _text(ls, doc, coords, params.position, markdown)
    if text is None:
        return None
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    return types.Hover(contents=types.MarkupContent(kind=kind, value=text))


def _text(
    ls: FxlensServer, doc: Document, coords: Coords | CellCoords, position: types.Position, markdown: bool
) -> str | None:
    line, col = coords.report_position(position)
    doc.cursor_line = line  # the next trace starts with this class
    view = doc.view()
    if ls.settings.execution == "off":
        return execution_off_text(doc.lines, line)
    if isinstance(coords, CellCoords):
        # in the cell's own line numbers when the class is in this cell; else the module's
        return hover_text(
            coords.local_report(view.report), *coords.cell_position(position), markdown, view.stale
        ) or hover_text(view.report, line, col, markdown=markdown, stale=view.stale)
    computing = ls.on_demand.hovered(doc, view.report, line, ls.settings.levels)
    return hover_text(view.report, line, col, markdown=markdown, stale=view.stale, computing=computing)

"""textDocument/hover: what fxlens knows about the line under the cursor."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from lsprotocol import types

from fxlens.lsp.cells import CellCoords
from fxlens.render.hover import execution_off_text, hover_text

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer


def _markdown(ls: "FxlensServer") -> bool:
    formats = ls.capability("text_document", "hover", "content_format")
    return formats is None or types.MarkupKind.Markdown in formats


def register(ls: "FxlensServer") -> None:
    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: "FxlensServer", params: types.HoverParams) -> Optional[types.Hover]:
        doc = ls.document(params.text_document.uri)
        if doc is None:
            return None
        coords = ls.coords(doc, params.text_document.uri)
        line, col = coords.report_position(params.position)
        doc.cursor_line = line  # the next trace starts with this class
        view = doc.view()
        markdown = _markdown(ls)
        if ls.settings.execution == "off":
            text = execution_off_text(doc.lines, line)
        elif isinstance(coords, CellCoords):
            # in the cell's own line numbers when the class is in this cell; else the module's
            text = (hover_text(coords.local_report(view.report), *coords.cell_position(params.position), markdown,
                               view.stale) or hover_text(view.report, line, col, markdown=markdown, stale=view.stale))
        else:
            computing = ls.on_demand.hovered(doc, view.report, line, ls.settings.levels)
            text = hover_text(view.report, line, col, markdown=markdown, stale=view.stale, computing=computing)
        if text is None:
            return None
        kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
        return types.Hover(contents=types.MarkupContent(kind=kind, value=text))

"""textDocument/inlayHint (off unless fxlens.inlayHints): the shape an assignment stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.render.inlay import inlay_hints

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer


def on_inlay_hint(ls: FxlensServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    doc = ls.document(params.text_document.uri)
    if doc is None or not ls.settings.inlay_hints:
        return []
    coords = ls.coords(doc, params.text_document.uri)
    first, _ = coords.report_position(params.range.start)
    last, _ = coords.report_position(params.range.end)
    return [
        types.InlayHint(
            position=coords.lsp_position(h.line, h.col), label=h.label, kind=types.InlayHintKind.Type, padding_left=True
        )
        for h in inlay_hints(doc.view().report, doc.text, first, last)
    ]

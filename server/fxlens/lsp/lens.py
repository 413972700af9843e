"""textDocument/codeLens: node counts per level on each Module class, the graph command, and on `def forward`
the guards of what torch.compile compiled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.lsp.cells import CellCoords
from fxlens.lsp.head_lens import head_lenses
from fxlens.render.guards import lens_lines
from fxlens.render.lens import class_lenses

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

SHOW_GRAPH = "fxlens.showGraph"


def on_code_lens(ls: FxlensServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    doc = ls.document(uri)
    if doc is None:
        return []
    view = doc.view()
    coords = ls.coords(doc, uri)
    lenses = []
    for cls in view.report.classes:
        if not coords.contains(cls.line):
            continue  # a notebook shows a class's lenses in the cell that defines it
        where = coords.lsp_range(cls.line, 0)
        shown = coords.local_class(cls) if isinstance(coords, CellCoords) else cls
        for title in class_lenses(shown or cls, ls.settings.levels, stale=view.stale):
            command = types.Command(
                title=title.title,
                command=SHOW_GRAPH,
                tooltip=title.tooltip or None,
                arguments=[uri, cls.name, title.level],
            )
            lenses.append(types.CodeLens(range=where, command=command))
        for line, guarded in lens_lines(cls).items():  # on `def forward`: its guards, counted
            if coords.contains(line):
                command = types.Command(title=guarded, command=SHOW_GRAPH, arguments=[uri, cls.name, "dynamo"])
                lenses.append(types.CodeLens(range=coords.lsp_range(line, 0), command=command))
    return lenses + head_lenses(ls, doc, view)

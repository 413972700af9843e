"""The "vs HEAD" code lens (setting `fxlens.diffLens`, off by default): over each class whose graphs
differ from the last commit's version of the file, how (`vs HEAD: +12 nodes, +1 break`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.documents import Document, View
from fxlens.render.head_lens import vs_head_title
from fxlens.report import FileReport

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer


def refresh(ls: FxlensServer) -> None:
    if ls.capability("workspace", "code_lens", "refresh_support"):
        ls.workspace_code_lens_refresh(None)


def head_lenses(ls: FxlensServer, doc: Document, view: View) -> list[types.CodeLens]:
    if not ls.settings.diff_lens:
        return []

    async def trace(text: str) -> FileReport:
        client = await ls.supervisor.get()
        # (the lens compares graphs: HEAD's costs would only keep the answer waiting)
        options = replace(ls.settings.trace_options(), cost=False)
        return await client.analyse(doc.path, text, options, roots=ls.roots())

    key = repr((ls.settings.trace_options(), ls.roots()))
    ls.baselines.refresh(doc.path, key, trace, lambda: refresh(ls))
    base = ls.baselines.current(doc.path)
    if base is None:
        return []
    coords = ls.coords(doc)
    lenses = []
    for cls in view.report.classes:
        title = vs_head_title(base.report.find_class(cls.name), cls, base.text, doc.text)
        if title:
            lenses.append(
                types.CodeLens(range=coords.lsp_range(cls.line, 0), command=types.Command(title=title, command=""))
            )
    return lenses

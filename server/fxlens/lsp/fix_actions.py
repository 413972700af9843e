"""textDocument/codeAction: the proven fixes of the findings in the range as quick fixes (preferred, the proof
in the title: "Replace with torch.where — graph breaks 2 → 0, outputs equal on 3 inputs"), and "Fix all proven
in file" (`source.fixAll`). The edits are the worker's (engine/fixes.py), the same `fxlens check --fix` makes;
a fix whose text changed since its proof is not offered. In a notebook, each cell gets the fixes inside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.fixes import proven_fixes
from fxlens.fix_report import Fix, StaleFix, apply_edits, apply_fixes
from fxlens.report import FileReport

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.cells import CellCoords
    from fxlens.lsp.positions import Coords

FIX_ALL_TITLE = "Fix all proven in file"


def _still_applies(text: str, fix: Fix) -> bool:
    try:
        apply_edits(text, fix.edits)
    except StaleFix:
        return False
    return True


def _edits(fixes: list[Fix], coords: Coords | CellCoords) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=coords.lsp_range(e.line, e.col, e.end_line, e.end_col), new_text=e.new_text)
        for fix in fixes
        for e in fix.edits
    ]


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """The client's `only` filter: a kind matches its own name and the kinds under it."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def fix_actions(
    doc: Document,
    report: FileReport,
    coords: Coords | CellCoords,
    params: types.CodeActionParams,
    lines: tuple[int, int],
) -> list[types.CodeAction]:
    """The quick fixes of the findings on report lines `lines` (first, last), then the file's fix-all."""
    uri, only = params.text_document.uri, params.context.only
    offered = [
        f
        for f in proven_fixes(report)
        if all(coords.contains(e.line) and coords.contains(e.end_line) for e in f.edits) and _still_applies(doc.text, f)
    ]
    actions = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for fix in offered:
            if not (fix.line <= lines[1] and lines[0] <= fix.end_line):
                continue
            start = coords.lsp_position(fix.line, fix.col)
            answered = [d for d in params.context.diagnostics if d.range.start == start]
            actions.append(
                types.CodeAction(
                    title=fix.label(),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=answered or None,
                    is_preferred=True,
                    edit=types.WorkspaceEdit(changes={uri: _edits([fix], coords)}),
                )
            )
    _, applied = apply_fixes(doc.text, offered)
    if applied and _wanted(types.CodeActionKind.SourceFixAll, only):
        actions.append(
            types.CodeAction(
                title=f"{FIX_ALL_TITLE} ({len(applied)} fix{'es' if len(applied) > 1 else ''}, each proven)",
                kind=types.CodeActionKind.SourceFixAll,
                edit=types.WorkspaceEdit(changes={uri: _edits(applied, coords)}),
            )
        )
    return actions

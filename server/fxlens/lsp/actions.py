"""textDocument/codeAction: "Pin these arguments as a `# fxlens:` directive" on a class fxlens built
from guessed arguments, and the drafted directive of a class without a graph (lsp/drafts.py). The
edit inserts the directive above the class's decorators, so the next trace builds the class from it
(`built: directive`) and the guess is no longer a guess. Beside them, the graph passes' actions
(lsp/passes.py), "Compile with dynamic=True" where it is proven (lsp/dynamic_action.py), and the proven fixes
of the findings in the range with the file's fix-all (lsp/fix_actions.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.parsing import cheap_parse
from fxlens.lsp import dynamic_action, passes
from fxlens.lsp.drafts import directive_edit, draft_action
from fxlens.lsp.fix_actions import fix_actions
from fxlens.outline import header_line
from fxlens.report import ClassReport, FileReport

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.cells import CellCoords
    from fxlens.lsp.positions import Coords
    from fxlens.lsp.server import FxlensServer

PIN_TITLE = "Pin these arguments as a `# fxlens:` directive"
GUESSED = "guessed"  # the category of the hint that says a class was built from guessed arguments


def _pin(
    doc: Document, cls: ClassReport, top: int, coords: Coords | CellCoords, uri: str, context: types.CodeActionContext
) -> types.CodeAction:
    edit = directive_edit(doc, top, coords, cls.build.directive)
    class_line = coords.lsp_position(cls.line, 0).line
    hints = [d for d in context.diagnostics if d.code == GUESSED and d.range.start.line == class_line]
    return types.CodeAction(
        title=PIN_TITLE,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=hints or None,
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


def on_code_action(ls: FxlensServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    doc = ls.document(uri)
    if doc is None:
        return []
    view = doc.view()
    if view.stale:
        return []  # positions from an older text: an insertion could land anywhere
    coords = ls.coords(doc, uri)
    first, _ = coords.report_position(params.range.start)
    last, _ = coords.report_position(params.range.end)
    fixes = fix_actions(doc, view.report, coords, params, (first, last))
    only = params.context.only
    if only is not None and all(kind.startswith(types.CodeActionKind.Source) for kind in only):
        return fixes  # a `source.fixAll` request (on save): nothing else here is of that kind
    return (
        _pins(doc, view.report, coords, params, first, last)
        + fixes
        + passes.actions(ls, doc, first, last)
        + dynamic_action.actions(doc, view.report, coords, uri, first, last)
    )


def _pins(
    doc: Document,
    report: FileReport,
    coords: Coords | CellCoords,
    params: types.CodeActionParams,
    first: int,
    last: int,
) -> list[types.CodeAction]:
    """For each class whose header (decorators to `class` line) meets lines first..last: the drafted
    directive of a class without a graph, or the pin of one built from guessed arguments."""
    tree = cheap_parse(doc.text)
    pins = []
    for cls in report.classes:
        top = header_line(doc.lines, cls.line, tree)
        if not (coords.contains(cls.line) and top <= last and first <= cls.line):
            continue
        drafted = draft_action(doc, cls, top, coords, params.text_document.uri, params.context)
        if drafted is not None:
            pins.append(drafted)
        elif cls.build.how == GUESSED and cls.build.directive:
            pins.append(_pin(doc, cls, top, coords, params.text_document.uri, params.context))
    return pins

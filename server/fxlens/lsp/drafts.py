"""textDocument/codeAction: "Draft a `# fxlens:` directive" on a class fxlens has no graph for (not built,
no inputs, its guesses rejected). The edit inserts the directive the worker drafted (draft_report.Draft, written
out by render/draft.py) above the class's decorators: fxlens's best values, a `FILL_…` placeholder for each
value it does not know, which the next trace's diagnostic names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.render.draft import action_title, directive_text
from fxlens.report import ClassReport

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.cells import CellCoords
    from fxlens.lsp.positions import Coords

# the categories of the diagnostics a draft answers: why there is no graph
ANSWERS = ("inputs", "construction", "guessed")
DIRECTIVE = "# fxlens:"


def directive_edit(doc: Document, top: int, coords: Coords | CellCoords, expression: str) -> types.TextEdit:
    """`# fxlens: <expression>` inserted at report line `top`, indented as that line is."""
    lines = doc.lines
    line_text = lines[top - 1] if top <= len(lines) else ""
    indent = line_text[: len(line_text) - len(line_text.lstrip())]
    return types.TextEdit(range=coords.lsp_range(top, 0), new_text=f"{indent}{DIRECTIVE} {expression}\n")


def _replacing(doc: Document, line: int, coords: Coords | CellCoords, expression: str) -> types.TextEdit | None:
    """The one `# fxlens:` line at report line `line` rewritten; None when the directive runs over several
    comment lines (which one to change is the user's call)."""
    lines = doc.lines
    block = []
    for text in lines[line - 1 :]:
        if not text.lstrip().startswith("#"):
            break
        block.append(text.lstrip())
    if sum(1 for text in block if text.startswith(DIRECTIVE)) != 1:
        return None
    text = lines[line - 1]
    indent = text[: len(text) - len(text.lstrip())]
    start = coords.lsp_position(line, 0)
    return types.TextEdit(
        range=types.Range(start=start, end=coords.line_end(line)), new_text=f"{indent}{DIRECTIVE} {expression}"
    )


def draft_action(
    doc: Document, cls: ClassReport, top: int, coords: Coords | CellCoords, uri: str, context: types.CodeActionContext
) -> types.CodeAction | None:
    if cls.draft is None:
        return None
    expression = directive_text(cls.draft)
    if cls.directive_line is not None:  # the user's directive built it without inputs: completed in place
        edit = _replacing(doc, cls.directive_line, coords, expression)
        if edit is None:
            return None
    else:
        edit = directive_edit(doc, top, coords, expression)
    class_line = coords.lsp_position(cls.line, 0).line
    answered = [d for d in context.diagnostics if d.code in ANSWERS and d.range.start.line == class_line]
    return types.CodeAction(
        title=action_title(cls.draft),
        kind=types.CodeActionKind.QuickFix,
        diagnostics=answered or None,
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )

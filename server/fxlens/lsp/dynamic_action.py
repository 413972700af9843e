"""Code action "Compile with dynamic=True": on `def forward` of a class, and on the `torch.compile(...)` call of
the file that compiles it, when the dynamo level's proof holds (worker/levels/recompiles.py): its varying sizes
compile again as compiled and not with `dynamic=True`, whose outputs equal eager's at both sizes. The edit adds
`dynamic=True` to that call; the title carries the proof. A file that compiles the class nowhere gets no edit
(the hover on `forward` says the `mark_dynamic` line to write where its inputs are made)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lsprotocol import types

from fxlens.engine.parsing import cheap_parse
from fxlens.render.guards import proof_title
from fxlens.report import ClassReport, FileReport

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.cells import CellCoords
    from fxlens.lsp.positions import Coords


def actions(
    doc: Document, report: FileReport, coords: Coords | CellCoords, uri: str, first: int, last: int
) -> list[types.CodeAction]:
    tree = cheap_parse(doc.text)
    if tree is None:
        return []
    found = []
    for cls in report.classes:
        result = cls.levels.get("dynamo")
        proof = result.dynamic if result is not None else None
        if result is None or proof is None or not proof.proven():
            continue
        forward = {frame.line for frame in result.frames if frame.line is not None}
        for call in compile_calls(tree, cls):
            end = call.end_lineno or call.lineno
            if not (any(first <= line <= last for line in forward) or (call.lineno <= last and first <= end)):
                continue
            if coords.contains(call.lineno):
                where = _after_last_argument(call)
                edit = types.TextEdit(range=coords.lsp_range(*where), new_text=", dynamic=True")
                found.append(
                    types.CodeAction(
                        title=proof_title(proof),
                        kind=types.CodeActionKind.RefactorRewrite,
                        edit=types.WorkspaceEdit(changes={uri: [edit]}),
                    )
                )
    return found


def _is_torch_compile(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "compile" and isinstance(node.value, ast.Name)


def _builds(node: ast.expr | None, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def compile_calls(tree: ast.Module, cls: ClassReport) -> list[ast.Call]:
    """`torch.compile(Cls(...))` and `torch.compile(model)` where `model = Cls(...)` in the file, without a
    `dynamic=` of their own."""
    instances = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _builds(node.value, cls.name)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    calls = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_torch_compile(node.func) and node.args):
            continue
        if any(keyword.arg == "dynamic" for keyword in node.keywords):
            continue
        model = node.args[0]
        if _builds(model, cls.name) or (isinstance(model, ast.Name) and model.id in instances):
            calls.append(node)
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))


def _after_last_argument(call: ast.Call) -> tuple[int, int]:
    """Where `, dynamic=True` goes: after the call's last argument (1-based line, UTF-8 column, as ast gives)."""
    nodes: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    return max((node.end_lineno or node.lineno, node.end_col_offset or 0) for node in nodes)

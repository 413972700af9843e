"""Inlay hints: the shape of the value an assignment line stores, e.g. `(B, 16) f32`."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from fxlens.render import nodes as q
from fxlens.report import LEVELS, ClassReport, FileReport, Node


@dataclass
class Hint:
    line: int  # where the label goes: the end of the statement (1-based line, byte column)
    col: int
    label: str


def _assignments(text: str) -> list[ast.stmt]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []  # mid-edit: no hints rather than hints at guessed places
    return [
        n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None
    ]


def _assigned(cls: ClassReport, stmt: ast.stmt) -> Node | None:
    """The node holding the value stored: the last node the statement made, first instance only."""
    for level in LEVELS:  # the shallowest level that has it
        result = cls.levels.get(level)
        if result is None or not result.ok:
            continue
        made = [
            n
            for n in result.nodes
            if n.line is not None
            and stmt.lineno <= n.line <= (stmt.end_lineno or n.line)
            and n.op not in ("placeholder", "output")
        ]
        groups = q.instances(made, q.leaf_paths(cls))
        if groups and groups[0].nodes:
            return groups[0].nodes[-1]
    return None


def inlay_hints(report: FileReport, text: str, first_line: int, last_line: int) -> list[Hint]:
    hints = []
    for stmt in _assignments(text):
        if not first_line <= stmt.lineno <= last_line:
            continue
        container = [c for c in report.classes if c.line <= stmt.lineno <= c.end_line]
        for cls in container + [c for c in report.classes if c not in container]:
            node = _assigned(cls, stmt)
            label = q.value(node) if node is not None else ""
            if label:
                hints.append(Hint(stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0, label))
                break
    return sorted(hints, key=lambda h: (h.line, h.col))

"""A file cut into its top-level classes and the rest (stdlib only: both the server and the worker use it).

Two texts with the same outline differ only in where things are, which shifting handles; a class's
chunk is what its fingerprint reads of its own code.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from fxlens import lines as line_model


@dataclass
class Outline:
    classes: dict[str, str]  # class name -> its lines, with its decorators and the comments above it
    rest: str  # the non-blank lines outside every class, in order


def outline(tree: ast.Module, text: str) -> Outline:
    lines = line_model.split(text)
    taken = [False] * len(lines)
    classes: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1  # the `# fxlens:` directive (and any comment block) belongs to the class
        end = node.end_lineno or node.lineno
        classes[node.name] = "\n".join(lines[start:end])
        for index in range(start, end):
            taken[index] = True
    # blank lines only move things
    rest = "\n".join(line for line, inside in zip(lines, taken) if not inside and line.strip())
    return Outline(classes, rest)


def header_line(lines: Sequence[str], class_line: int, tree: ast.Module | None = None) -> int:
    """The first line of the class statement at `class_line` of the text whose lines are `lines`,
    decorators included: where a `# fxlens:` directive goes. Without a parse (`tree` None: mid-edit), the
    `@` lines directly above count."""
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.lineno == class_line:
                return min([node.lineno, *(d.lineno for d in node.decorator_list)])
    line = class_line
    while line > 1 and lines[line - 2].lstrip().startswith("@"):
        line -= 1
    return line

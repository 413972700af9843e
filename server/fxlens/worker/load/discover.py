"""What the source says about each class: its span, its `# fxlens:` directive, where members are made."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field

from fxlens import lines as line_model

DIRECTIVE = "# fxlens:"


@dataclass
class ClassSource:
    name: str
    line: int  # the `class` line (1-based)
    end_line: int
    node: ast.ClassDef
    directive: str | None = None
    directive_line: int | None = None
    # attribute name -> line of `self.X = ...` / `register_buffer("X", ...)` in the class body
    member_lines: dict[str, int] = field(default_factory=dict)


def directive_above(lines: list[str], first_line: int) -> tuple[str | None, int | None]:
    """The `# fxlens: expr` comment lines directly above line `first_line` (1-based), joined."""
    parts: list[str] = []
    index = first_line - 2
    start = None
    while index >= 0 and lines[index].strip().startswith("#"):
        stripped = lines[index].strip()
        if stripped.startswith(DIRECTIVE):
            parts.insert(0, stripped[len(DIRECTIVE) :].strip())
            start = index + 1
        index -= 1
    return (" ".join(parts), start) if parts else (None, None)


def directive_between(lines: list[str], first_line: int, class_line: int) -> tuple[str | None, int | None]:
    """A `# fxlens:` comment among the decorators or between them and the `class` line."""
    for line in range(first_line + 1, class_line + 1):
        if lines[line - 1].strip().startswith(DIRECTIVE) and not lines[line - 2].strip().startswith(DIRECTIVE):
            found = directive_above(lines, _end_of_comments(lines, line))
            if found[0]:
                return found
    return None, None


def _end_of_comments(lines: list[str], line: int) -> int:
    """The first line at or after `line` that is not a comment (what a comment block sits above)."""
    while line <= len(lines) and lines[line - 1].strip().startswith("#"):
        line += 1
    return line


def _member_lines(cls: ast.ClassDef) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    found.setdefault(target.attr, node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("register_buffer", "register_parameter", "add_module", "register_module"):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    found.setdefault(node.args[0].value, node.lineno)
    return found


# `try`, and from 3.11 `try` with `except*`: the same fields
if sys.version_info >= (3, 11):
    _TRY_STATEMENTS = (ast.Try, ast.TryStar)
else:
    _TRY_STATEMENTS = (ast.Try,)


def top_level_classes(body: list[ast.stmt]) -> list[ast.ClassDef]:
    """The class statements a module's import defines at its top level, in file order: those of the
    body and of its top-level `if`/`try` blocks (a `try: import x / except: class Fallback`), not
    those inside functions, classes, loops or `with` blocks."""
    found: list[ast.ClassDef] = []
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            found.append(stmt)
        elif isinstance(stmt, ast.If):
            found += top_level_classes(stmt.body) + top_level_classes(stmt.orelse)
        elif isinstance(stmt, _TRY_STATEMENTS):
            found += top_level_classes(stmt.body)
            for handler in stmt.handlers:
                found += top_level_classes(handler.body)
            found += top_level_classes(stmt.orelse) + top_level_classes(stmt.finalbody)
    return found


def the_ones_that_ran(sources: list[ClassSource], namespace: dict) -> list[ClassSource]:
    """One source per class name: where `if`/`else` (or `try`/`except`) branches define the same name,
    the statement whose class the module holds (its methods' code lies in that statement), else the last."""
    by_name: dict[str, list[ClassSource]] = {}
    for source in sources:
        by_name.setdefault(source.name, []).append(source)

    def ran(source: ClassSource) -> bool:
        cls = namespace.get(source.name)
        lines = (
            [getattr(getattr(v, "__code__", None), "co_firstlineno", 0) for v in vars(cls).values()]
            if isinstance(cls, type)
            else []
        )
        return any(source.line <= line <= source.end_line for line in lines)

    chosen = {name: next((s for s in found if ran(s)), found[-1]) for name, found in by_name.items()}
    return [s for s in sources if chosen[s.name] is s]


def classes_in(tree: ast.Module, text: str) -> list[ClassSource]:
    """Top-level class statements (see top_level_classes), in file order (whether they are Modules is
    decided at run time)."""
    lines = line_model.split(text)
    result = []
    for node in top_level_classes(tree.body):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        directive, directive_line = directive_above(lines, first)
        if directive is None:
            directive, directive_line = directive_between(lines, first, node.lineno)
        result.append(
            ClassSource(
                node.name,
                node.lineno,
                node.end_lineno or node.lineno,
                node,
                directive,
                directive_line,
                _member_lines(node),
            )
        )
    return result


def calls_to(tree: ast.Module, name: str) -> list[ast.Call]:
    """Every `name(...)` call in the file, wherever it is (a `__main__` block included)."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


def qualnames_by_line(tree: ast.Module) -> dict[int, str]:
    """Line -> qualified name of the innermost function around it, as `co_qualname` spells it."""
    found: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    found[line] = name  # inner functions are visited later and overwrite
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found

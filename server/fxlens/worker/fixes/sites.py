"""What a rewrite reads: the finding, the syntax tree around it, and the edits it proposes.

A rewrite is a source-text edit at exact ranges taken from the syntax tree (UTF-8 byte columns, as Python's
`ast` gives them and the report uses), never a regular expression over lines.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fxlens.fix_report import TextEdit, edit_range
from fxlens.report import Diagnostic

UNKNOWN = object()  # Site.value_of: what the file's text alone cannot tell


@dataclass
class Site:
    """One finding in one class, with what its rewrite reads."""

    diagnostic: Diagnostic
    text: str
    tree: ast.Module
    cls: ast.ClassDef
    namespace: dict[str, Any]  # the loaded file's globals: which names are torch, logging, a Logger
    levels: tuple[str, ...] = ()  # the levels that report a finding on this line
    instance: Any = None  # the traced instance, which `self` is (its attributes read statically)

    def functions(self) -> Iterator[ast.FunctionDef]:
        """The class's methods, `__init__` excepted (a rewrite never changes how the instance is built), and the
        file's module-level functions (helpers its methods call: the proof runs this class)."""
        for node in self.cls.body:
            if isinstance(node, ast.FunctionDef) and node.name != "__init__":
                yield node
        yield from (node for node in self.tree.body if isinstance(node, ast.FunctionDef))

    def enclosing(self, kind: type | tuple[type, ...]) -> list[ast.AST]:
        """The nodes of `kind` inside a method whose span holds the finding's position, innermost first."""
        line, col = self.diagnostic.line, self.diagnostic.col
        found = [
            node
            for function in self.functions()
            for node in ast.walk(function)
            if isinstance(node, kind) and holds(node, line, col)
        ]
        # a node inside another starts later or ends sooner
        return sorted(found, key=_extent, reverse=True)

    def statement_at(self) -> ast.stmt | None:
        """The innermost statement of a method that starts on the finding's line."""
        found: ast.stmt | None = None
        for function in self.functions():
            for node in ast.walk(function):
                if isinstance(node, ast.stmt) and node is not function and node.lineno == self.diagnostic.line:
                    if found is None or holds(found, node.lineno, node.col_offset):
                        found = node
        return found

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def torch_name(self) -> str | None:
        """The name the file binds the torch module to (`torch`, `th`), None when it imports none."""
        import torch

        if self.namespace.get("torch") is torch:
            return "torch"
        return next((name for name, value in self.namespace.items() if value is torch), None)

    def value_of(self, node: ast.expr) -> Any:
        """What `node` is in the loaded file, read without running code (`UNKNOWN` where that cannot tell): a name
        of the file or a builtin, `self` (the traced instance), an attribute of either (read statically: a property
        or `__getattr__` of the user's would run code)."""
        if isinstance(node, ast.Name):
            if node.id == "self" and self.instance is not None:
                return self.instance
            return self.namespace.get(node.id, getattr(builtins, node.id, UNKNOWN))
        if isinstance(node, ast.Attribute):
            owner = self.value_of(node.value)
            try:
                return UNKNOWN if owner is UNKNOWN else inspect.getattr_static(owner, node.attr)
            except AttributeError:
                return UNKNOWN
        return UNKNOWN

    def atom(self, node: ast.AST) -> str:
        """`node`'s text, in parentheses where an operator or a method call after it would bind differently."""
        text = self.segment(node)
        atomic = isinstance(node, (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Call))
        return text if atomic else f"({text})"

    def replace(self, node: ast.AST, new_text: str) -> TextEdit:
        return replace_range(self.text, node, node, new_text)


def _extent(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    """Sorts a node after the nodes it is inside: it starts later, or at the same place and ends sooner."""
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)), (-end[0], -end[1])


def holds(node: ast.AST, line: int, col: int) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return start <= (line, col) < end or start == (line, col)


def replace_range(text: str, first: ast.AST, last: ast.AST, new_text: str) -> TextEdit:
    """One edit replacing from `first`'s start to `last`'s end."""
    edit = TextEdit(first.lineno, first.col_offset, last.end_lineno or 0, last.end_col_offset or 0, new_text)  # type: ignore[attr-defined]
    start, end = edit_range(text, edit)
    edit.old_text = text[start:end]
    return edit


# an augmented assignment's operator, as the binary operator its out-of-place form uses
BINARY_OPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.Mod: "%",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


@dataclass
class Rewrite:
    """Edits that should remove the finding without changing what the module computes: proven before offered."""

    title: str  # "Replace with torch.where"
    what: str  # what it does and what it costs
    edits: list[TextEdit] = field(default_factory=list)
    # arguments whose tensors the caller sees changed by the original and not by the fix (said in `what`): the
    # proof checks the caller's tensors differ in these only
    changes_inputs: tuple[str, ...] = ()
    # levels whose finding the rewrite does not remove, and why (said in the proof): re-traced for new findings only
    unclaimed: dict[str, str] = field(default_factory=dict)


@dataclass
class Declined:
    """The rewrite's kind of site, where no rewrite keeps the semantics: said in the diagnostic."""

    title: str
    why: str


def pure(node: ast.AST) -> str:
    """ "" when evaluating `node` changes nothing but its value; else what it changes (in words)."""
    for inner in ast.walk(node):
        if isinstance(inner, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return "assigns or yields inside the expression"
        if isinstance(inner, ast.Call):
            func = inner.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name.endswith("_") and not name.endswith("__"):
                return f"calls `{name}`, which changes a tensor in place"
            if name in ("print", "setattr", "append", "extend", "update", "pop", "register_buffer", "open"):
                return f"calls `{name}`, a side effect"
    return ""


def calls(node: ast.AST) -> int:
    return sum(isinstance(inner, ast.Call) for inner in ast.walk(node))

"""A NameError for a name that only a statement the execution policy skipped would have set says so.

In a notebook the usual case: a cell assigns `WIDTH` inside a loop or a `with` block, or from a bare
call the policy does not run, and a class in a later cell needs it. The plain NameError reads as if
the name were missing from the code; the note names the statement (its `not-executed` hint is on its
line) and what to do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from fxlens.report import Diagnostic

_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def bound_names(stmt: ast.stmt) -> tuple[str, ...]:
    """The names a statement (and anything nested in it) would bind in its namespace."""
    names: list[str] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
    return tuple(dict.fromkeys(names))


def explain_skipped(diagnostic: Diagnostic, skipped: Sequence, execution: str) -> None:
    """`skipped`: loader.Skipped items (line, what, names)."""
    found = _NAME_ERROR.search(diagnostic.message)
    if found is None:
        return
    name = found.group(1)
    by = next((s for s in skipped if name in getattr(s, "names", ())), None)
    if by is None:
        return
    diagnostic.message += f" (`{name}` is set by {by.what}, which fxlens did not run)"
    diagnostic.explanation = (
        f"`{name}` is only assigned by {by.what}; the execution policy `{execution}` does not "
        "run it (see the not-executed hint on that statement)."
    )
    diagnostic.fix = (
        f"Assign `{name}` at the top level (assignments run), or pin the build with a "
        "`# fxlens:` directive that does not need it, or set fxlens.execution to `full`."
    )

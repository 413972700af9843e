"""The placeholders (`FILL_x`) a drafted directive holds where fxlens knew no value (draft_report.placeholder):
found in a directive before it runs, and said as the argument each stands for."""

from __future__ import annotations

import ast

from fxlens.draft_report import PLACEHOLDER_PREFIX
from fxlens.report import Diagnostic, Span


def placeholders(expressions: ast.expr | list[ast.expr]) -> list[str]:
    """The placeholders the expressions hold, in order, once each."""
    found: list[str] = []
    for node in expressions if isinstance(expressions, list) else [expressions]:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id.startswith(PLACEHOLDER_PREFIX) and sub.id not in found:
                found.append(sub.id)
    return found


def unfilled(class_name: str, names: list[str], stage: str, span: Span) -> Diagnostic:
    """At the directive's line: which values are still to fill in, and for what (constructor or forward)."""
    what = f"`{class_name}.__init__`" if stage == "construction" else f"`{class_name}.forward`"
    listed = ", ".join(f"`{n}`" for n in names)
    arguments = ", ".join(f"`{n[len(PLACEHOLDER_PREFIX) :]}`" for n in names)
    one = len(names) == 1
    return Diagnostic.at(
        span,
        "warning" if stage == "inputs" else "error",
        "placeholder",
        f"the directive leaves {arguments} of {what} to fill in: replace {listed} with "
        + ("a value" if one else "values"),
        "fxlens drafted this directive with the values it knows; it had none for "
        + ("this one" if one else "these")
        + (
            ": the class is built, but there is no aten level until forward has its inputs."
            if stage == "inputs"
            else "."
        ),
        f"Write {'a value' if one else 'values'} in place of {listed} (e.g. `torch.randn(2, 3, 32, 32)` for an image"
        " batch).",
        class_name=class_name,
    )

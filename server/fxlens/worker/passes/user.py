"""A user's `# fxlens: pass` function: found in its file's namespace, and its failures as diagnostics
at the pass's own lines (the innermost frame of the pass's file, else its `def` line)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from typing import Any

from fxlens.pass_report import PassInfo
from fxlens.report import Diagnostic, Span
from fxlens.worker.failures.classify import span_of, user_frames, whole_line
from fxlens.worker.load import loader
from fxlens.worker.passes.proof import first_line

_ERASED_IN_USE = re.compile(r"Tried to erase Node (\S+) but it still had (\d+) users")


def load_file(path: str, text: str, execution: str) -> dict[str, Any]:
    """The namespace of a pass file other than the model's, its top level run under the execution policy
    (imports and definitions in `safe`), its text in linecache so tracebacks show the buffer's lines."""
    tree = ast.parse(text, filename=path)
    if execution != "full":
        tree.body = loader.filter_safe(tree.body, [])
    else:
        tree.body = [s for s in tree.body if not loader.is_main_guard(s)]
    loader.seed_linecache(path, text)
    stem = os.path.splitext(os.path.basename(path))[0]
    namespace: dict[str, Any] = {"__name__": f"fxlens_pass_{stem}", "__file__": path}
    exec(compile(tree, path, "exec", dont_inherit=True), namespace)
    return namespace


def find(info: PassInfo, namespace: dict[str, Any]) -> Callable | None:
    found = namespace.get(info.name)
    return found if callable(found) else None


def def_span(info: PassInfo, lines: list[str]) -> Span:
    return whole_line(info.line or 1, lines)


def diagnostic(
    span: Span, severity: str, category: str, message: str, explanation: str = "", fix: str = ""
) -> Diagnostic:
    return Diagnostic.at(span, severity, category, message, explanation, fix, level="pass")


def raised(error: BaseException, info: PassInfo, lines: list[str]) -> Diagnostic:
    """The pass raised: at the innermost line of the pass's file that was running."""
    frames = user_frames(error, os.path.abspath(info.path or ""))
    span = span_of(*frames[-1], lines) if frames else def_span(info, lines)
    erased = _ERASED_IN_USE.search(str(error))
    if erased:
        return diagnostic(
            span,
            "error",
            "pass-erased-used-node",
            first_line(error),
            f"`{erased.group(1)}` still had {erased.group(2)} user(s) when the pass erased it: "
            "the graph would read a value that no longer exists.",
            f"First `{erased.group(1)}.replace_all_uses_with(new_node)`, then erase it (or let "
            "`gm.graph.eliminate_dead_code()` drop it once nothing uses it).",
        )
    return diagnostic(
        span,
        "error",
        "pass-error",
        first_line(error),
        f"The pass `{info.name}` raised while rewriting the graph.",
        "Fix the pass; the traceback's innermost line in this file is marked.",
    )

"""`print`, `logging` and `warnings` calls inside `forward` → kept out of the compiled path:
`if not torch.compiler.is_compiling(): print(...)` (and `torch.fx._symbolic_trace.is_fx_tracing()` where
symbolic_trace fails on the message too). Eager runs still print; torch.compile no longer breaks its graph
there (the message is not printed from compiled code, which is the cost said)."""

from __future__ import annotations

import ast
import logging
import warnings

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Skip while compiling"
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


def applies(site: Site) -> bool:
    # dynamo breaks at the call; symbolic_trace fails inside it when the message iterates a traced value
    return site.diagnostic.category == "graph-break" or site.diagnostic.level == "fx"


def _side_effect(site: Site, call: ast.Call) -> str:
    """What the call is ("print", "logging", "warnings"), "" for anything else."""
    func = call.func
    if isinstance(func, ast.Name):
        return "print" if func.id == "print" and "print" not in site.namespace else ""
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return ""
    owner = site.namespace.get(func.value.id)
    if func.attr in _LOG_METHODS and (owner is logging or isinstance(owner, logging.Logger)):
        return "logging"
    if func.attr == "warn" and owner is warnings:
        return "warnings"
    return ""


def propose(site: Site) -> Rewrite | Declined | None:
    statement = site.statement_at()
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    kind = _side_effect(site, statement.value)
    if not kind:
        return None
    torch = site.torch_name()
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    lines = site.text.splitlines()
    first, last = lines[statement.lineno - 1], lines[(statement.end_lineno or statement.lineno) - 1]
    indent = first[: len(first) - len(first.lstrip())]
    after = last.encode()[statement.end_col_offset or 0 :].decode(errors="ignore").strip()
    if len(indent.encode()) != statement.col_offset or (after and not after.startswith("#")):
        return Declined(TITLE, "the call shares its line with another statement")
    body = site.segment(statement)
    tracing = f" and not {torch}.fx._symbolic_trace.is_fx_tracing()" if "fx" in site.levels else ""
    guarded = f"if not {torch}.compiler.is_compiling(){tracing}:\n{indent}    {body}"
    return Rewrite(
        TITLE,
        f"The {kind} call runs in eager mode as before; torch.compile skips it instead of breaking its graph "
        "(compiled code no longer prints it).",
        [site.replace(statement, guarded)],
    )

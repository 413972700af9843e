"""`print`, `logging` and `warnings` calls inside `forward` → kept out of the compiled path:
`if not torch.compiler.is_compiling(): print(...)` (and `torch.fx._symbolic_trace.is_fx_tracing()` where
symbolic_trace fails on the message too). Eager runs still print; torch.compile no longer breaks its graph
there (the message is not printed from compiled code, which is the cost said)."""

from __future__ import annotations

import ast
import builtins
import logging
import warnings
from typing import Any

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Skip while compiling"
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_LOGGERS = (logging.Logger, logging.LoggerAdapter)
_WARNS = (warnings.warn, warnings.warn_explicit)


def applies(site: Site) -> bool:
    # dynamo breaks at the call; symbolic_trace fails inside it when the message iterates a traced value
    return site.diagnostic.category == "graph-break" or site.diagnostic.level == "fx"


def _value(site: Site, node: ast.expr) -> Any:
    """`site.value_of(node)`, and a call of `logging.getLogger(...)` taken for the Logger it returns."""
    if isinstance(node, ast.Call) and site.value_of(node.func) is logging.getLogger:
        return logging.root  # which logger does not matter here: a Logger
    return site.value_of(node)


def _side_effect(site: Site, call: ast.Call) -> str:
    """What the call is ("print", "logging", "warnings"), "" for anything else: `print`; any logging method of a
    Logger or LoggerAdapter however the file reaches it (a module-level `logger`, `self.logger`, a class's `log`,
    `logging.getLogger(__name__).info`, `debug = logger.debug`) or of the `logging` module; `warnings.warn` under
    any name."""
    func = call.func
    target = _value(site, func)
    if target is builtins.print:
        return "print"
    if target in _WARNS:
        return "warnings"
    owner = getattr(target, "__self__", None)  # a bound method (`trace = logger.debug`)
    name = getattr(target, "__name__", "")
    if isinstance(owner, _LOGGERS) and name in _LOG_METHODS:
        return "logging"
    if isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS:
        owner = _value(site, func.value)  # a method read statically is the class's function: its owner says
        if owner is logging or isinstance(owner, _LOGGERS):
            return "logging"
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

"""`len(x)` of a tensor → `x.shape[0]`: the same number in eager, and a size symbolic_trace records (`len`
of a traced value is refused by torch.fx unless `len` itself is wrapped)."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Rewrite, Site

TITLE = "Use x.shape[0]"


def applies(site: Site) -> bool:
    return site.diagnostic.category == "builtin-on-proxy" and "'len'" in site.diagnostic.message


def _is_len(site: Site, call: ast.AST) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "len"
        and "len" not in site.namespace
        and len(call.args) == 1
        and not call.keywords
    )


def propose(site: Site) -> Rewrite | None:
    call = next((c for c in site.enclosing(ast.Call) if _is_len(site, c)), None)
    if not isinstance(call, ast.Call):
        return None
    text = site.atom(call.args[0])
    return Rewrite(
        TITLE, "The batch size as a traced size: the same number in eager.", [site.replace(call, f"{text}.shape[0]")]
    )

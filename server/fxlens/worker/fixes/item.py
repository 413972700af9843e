"""`.item()` feeding tensor code → the value kept as a 0-dim tensor: the graph goes on through it instead of
breaking to hand Python a number (torch.compile's `Tensor.item()` break). Arithmetic with the tensor gives
the same values; where Python would have computed in double precision the proof says how close they are."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Rewrite, Site

TITLE = "Keep the value a tensor"


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "graph-break" or d.category == "item/numpy"


def propose(site: Site) -> Rewrite | None:
    call = next((c for c in site.enclosing(ast.Call) if _is_item(c)), None)
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    return Rewrite(
        TITLE,
        "The value stays a 0-dim tensor (no `.item()`): one graph instead of a break and a host sync.",
        [site.replace(call, site.segment(call.func.value))],
    )


def _is_item(call: ast.AST) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "item"
        and not call.args
        and not call.keywords
    )

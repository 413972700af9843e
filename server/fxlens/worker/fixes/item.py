"""`.item()` feeding tensor code → the value kept as a 0-dim tensor: the graph goes on through it instead of
breaking to hand Python a number (torch.compile's `Tensor.item()` break). Arithmetic with the tensor gives
the same values; where Python would have computed in double precision the proof says how close they are."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Rewrite, Site

TITLE = "Keep the value a tensor"


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category in ("graph-break", "item/numpy", "proxy-as-number")


def propose(site: Site) -> Rewrite | None:
    call = next((c for c in site.enclosing(ast.Call) if _is_item(c)), None)
    if not isinstance(call, ast.Call):
        return None
    if "float" in site.namespace and not isinstance(call.func, ast.Attribute):
        return None  # the file's own `float`
    value = call.func.value if isinstance(call.func, ast.Attribute) else call.args[0]
    return Rewrite(
        TITLE,
        "The value stays a 0-dim tensor (no `.item()` or `float()`): one graph instead of a break and a host sync.",
        [site.replace(call, site.segment(value))],
    )


def _is_item(call: ast.AST) -> bool:
    """`t.item()`, or `float(t)` (Python's float of a tensor: its item)."""
    if not isinstance(call, ast.Call) or call.keywords:
        return False
    if isinstance(call.func, ast.Attribute):
        return call.func.attr == "item" and not call.args
    return isinstance(call.func, ast.Name) and call.func.id == "float" and len(call.args) == 1

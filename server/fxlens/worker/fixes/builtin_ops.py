"""Python's `min`/`max` of two values on tensors → the torch op: `torch.minimum`/`torch.maximum` for two
tensors, `torch.clamp` against a number. The builtins compare with `>` and ask Python for a bool, which no
tracer can record; the torch ops are one graph node and compute the same values."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Use the torch op"
_OPS = {"max": ("maximum", "min"), "min": ("minimum", "max")}


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "data-dependent-control-flow" or d.category == "graph-break"


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _is_builtin(site: Site, call: ast.AST) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id in _OPS
        and call.func.id not in site.namespace  # the file's own `max` is not the builtin
        and len(call.args) == 2
        and not call.keywords
        and not any(isinstance(a, ast.Starred) for a in call.args)
    )


def propose(site: Site) -> Rewrite | Declined | None:
    call = next((c for c in site.enclosing(ast.Call) if _is_builtin(site, c)), None)
    if call is None:
        return None
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    torch = site.torch_name()
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    both, bound = _OPS[call.func.id]
    first, second = call.args
    if _number(first) and _number(second):
        return None
    if _number(second) or _number(first):
        tensor, number = (first, second) if _number(second) else (second, first)
        text = f"{torch}.clamp({site.segment(tensor)}, {bound}={site.segment(number)})"
    else:
        text = f"{torch}.{both}({site.segment(first)}, {site.segment(second)})"
    return Rewrite(
        TITLE,
        f"`{call.func.id}` of two values becomes one torch op: the same values, no Python comparison.",
        [site.replace(call, text)],
    )

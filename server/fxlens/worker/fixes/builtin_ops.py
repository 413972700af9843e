"""Python's builtins on tensors → the torch op: `min`/`max` of two values → `torch.minimum`/`torch.maximum` for
two tensors, `torch.clamp` against a number (the builtins compare with `>` and ask Python for a bool, which no
tracer can record); `sum(t)` of a tensor → `t.sum(0)` (the builtin iterates the tensor's first dimension, which
symbolic_trace cannot). `range(t)` of a tensor's value is declined: the loop's count is data, and no torch op
keeps such a loop one graph."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Use the torch op"
_OPS = {"max": ("maximum", "min"), "min": ("minimum", "max")}


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category in ("data-dependent-control-flow", "graph-break", "map-over-proxy", "proxy-iteration")


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


def _is_size(node: ast.expr) -> bool:
    """`x.shape[0]`, `x.size(0)`, `len(x)`: a size, which tracers treat apart from values."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in ("shape", "size", "ndim", "numel"):
            return True
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "len":
            return True
    return False


def _builtin_call(site: Site, call: ast.AST, name: str, args: int) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == name
        and name not in site.namespace
        and len(call.args) == args
        and not call.keywords
        and not isinstance(call.args[0], (ast.Starred, ast.GeneratorExp, ast.ListComp, ast.List, ast.Tuple))
    )


def propose(site: Site) -> Rewrite | Declined | None:
    enclosing = site.enclosing(ast.Call)
    counted = next((c for c in enclosing if _builtin_call(site, c, "range", 1)), None)
    if isinstance(counted, ast.Call):
        if _is_size(counted.args[0]):
            return None  # a size, not a value: symbolic_trace's concrete_args, not a torch op
        return Declined(
            TITLE,
            "`range` of a tensor's value: the loop runs a data-dependent number of times, which no graph holds "
            "(make the count a Python int the caller passes, or write the loop as tensor ops)",
        )
    summed = next((c for c in enclosing if _builtin_call(site, c, "sum", 1)), None)
    if isinstance(summed, ast.Call):
        text = site.atom(summed.args[0])
        return Rewrite(
            TITLE,
            "`sum` of a tensor adds its rows one by one in Python; `.sum(0)` is one op over the same rows "
            "(the same values, added in torch's order: equal or within rounding).",
            [site.replace(summed, f"{text}.sum(0)")],
        )
    call = next((c for c in enclosing if _is_builtin(site, c)), None)
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

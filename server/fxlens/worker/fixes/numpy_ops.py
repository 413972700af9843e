"""A NumPy reduction of a tensor's values (`np.percentile(t.numpy(), 95)`, `np.mean(t.detach().numpy())`) → the
torch op that computes it on the tensor (`torch.quantile(t.detach(), 0.95)`, `t.detach().mean()`): no tracer
follows a value into NumPy (symbolic_trace: "invalid __array_struct__"; export: `.numpy()` of a fake tensor;
dynamo: a break), and each op here reduces the whole tensor as NumPy reduces the flattened array. A Python
number made of the result (`float(...)`, `.item()`, `torch.tensor(...)`) stays the 0-dim tensor. Only a call with
the array alone (and `q` where it takes one) is rewritten: an `axis=`, `ddof=` or `out=` has its own meaning.
"""

from __future__ import annotations

import ast
import builtins

from fxlens.worker.fixes.sites import Rewrite, Site

TITLE = "Use the torch op"
# NumPy's name: the torch form, `{x}` the tensor and `{q}` the fraction asked for. NumPy's median and
# percentiles interpolate linearly between the two nearest values, as torch.quantile does by default
# (torch.median would take the lower one); std and var divide by n (ddof=0), which torch's correction=0 is.
_OPS = {
    "percentile": "{torch}.quantile({x}, {q})",
    "quantile": "{torch}.quantile({x}, {q})",
    "median": "{torch}.quantile({x}, 0.5)",
    "mean": "{x}.mean()",
    "sum": "{x}.sum()",
    "max": "{x}.max()",
    "amax": "{x}.max()",
    "min": "{x}.min()",
    "amin": "{x}.min()",
    "std": "{x}.std(correction=0)",
    "var": "{x}.var(correction=0)",
    "norm": "{x}.norm()",  # np.linalg.norm without ord or axis: the 2-norm of the flattened array
}
_TAKES_Q = frozenset({"percentile", "quantile"})
_LEAVES = ("numpy", "tolist")


def applies(site: Site) -> bool:
    d = site.diagnostic
    # fx: NumPy fails inside its own code; aten: `.numpy()` of a fake tensor; dynamo: a break or its trace failing
    return d.category in ("graph-break", "item/numpy", "trace", "library-internal", "proxy-as-number")


def _numpy_name(site: Site, func: ast.expr) -> str:
    """The NumPy function `func` names in the loaded file (`np.percentile`, `numpy.linalg.norm`, a name imported
    from numpy), "" for anything else. NumPy is not imported here: the worker needs only torch."""
    value = site.value_of(func)
    name = getattr(value, "__name__", "")
    module = getattr(value, "__module__", "") or ""
    return name if name in _OPS and module.split(".")[0] == "numpy" else ""


def _tensor_of(call: ast.expr) -> ast.expr | None:
    """`t` of `t.numpy()` / `t.tolist()`."""
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _LEAVES
        and not call.args
        and not call.keywords
    ):
        return call.func.value
    return None


def _fraction(site: Site, name: str, q: ast.expr) -> str:
    """The quantile torch.quantile takes: NumPy's percentile over 100, computed where it is a number."""
    if name == "quantile":
        return site.segment(q)
    if isinstance(q, ast.Constant) and isinstance(q.value, (int, float)) and not isinstance(q.value, bool):
        return repr(q.value / 100)
    return f"{site.atom(q)} / 100"


def _wrapper(site: Site, statement: ast.AST, call: ast.Call, torch: str) -> tuple[ast.AST, str]:
    """What makes a Python number (or a new tensor) of the NumPy result, which the tensor then replaces whole:
    `float(r)`, `r.item()`, `torch.tensor(r)` / `torch.as_tensor(r)` (their `dtype=`/`device=` kept as `.to(...)`,
    the text to add); else the call itself."""
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "item" and func.value is call and not node.args:
            return node, ""
        if node.args != [call]:
            continue
        if isinstance(func, ast.Name) and site.value_of(func) is builtins.float and not node.keywords:
            return node, ""
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == torch
            and func.attr in ("tensor", "as_tensor")
            and all(k.arg in ("dtype", "device") for k in node.keywords)
        ):
            kept = ", ".join(site.segment(k) for k in node.keywords)
            return node, f".to({kept})" if kept else ""
    return call, ""


def propose(site: Site) -> Rewrite | None:
    statement = site.statement_at()
    torch = site.torch_name()
    if statement is None or torch is None:
        return None
    for call in (n for n in ast.walk(statement) if isinstance(n, ast.Call)):
        name = _numpy_name(site, call.func)
        wanted = 2 if name in _TAKES_Q else 1
        tensor = _tensor_of(call.args[0]) if name and call.args else None
        if tensor is None or len(call.args) != wanted or call.keywords:
            continue
        x = site.atom(tensor)
        x = x if x.endswith(".detach()") else f"{x}.detach()"  # NumPy's values never carry a gradient
        q = _fraction(site, name, call.args[1]) if name in _TAKES_Q else ""
        replaced, suffix = _wrapper(site, statement, call, torch)
        return Rewrite(
            TITLE,
            f"NumPy's `{name}` of the tensor's values becomes the torch op on the tensor: the same reduction of "
            "every element, kept in the graph (a 0-dim tensor where the code made a Python number of it).",
            [site.replace(replaced, _OPS[name].format(torch=torch, x=x, q=q) + suffix)],
        )
    return None

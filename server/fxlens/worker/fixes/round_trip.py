"""A tensor sent to NumPy or a Python list and straight back (`torch.from_numpy(t.numpy())`,
`torch.tensor(t.tolist())`) → the tensor kept a tensor: no tracer follows a value out of torch, and the round
trip gives back the same values. `from_numpy`/`as_tensor` of `.numpy()` share the tensor's memory, so the tensor
itself replaces them; `torch.tensor` copies, so its rewrite copies too (`.detach().clone()`). A value that goes
on to NumPy or Python code is declined: there is no torch form of what that code does to it.
"""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Keep the value a tensor"
_LEAVES = ("numpy", "tolist")
_BACK = {"from_numpy": False, "as_tensor": False, "asarray": False, "tensor": True}  # name: it copies
_KEYWORDS = ("dtype", "device")


def applies(site: Site) -> bool:
    d = site.diagnostic
    # (NumPy meets a Proxy in its own code under fx: "library-internal"; in torch.tensor: a factory's failure)
    return d.category in ("graph-break", "item/numpy", "trace", "factory-with-traced-size", "library-internal")


def _leaves(call: ast.AST) -> bool:
    """`t.numpy()` or `t.tolist()`."""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _LEAVES
        and not call.args
        and not call.keywords
    )


def _back(site: Site, torch: str, call: ast.AST) -> bool:
    """`torch.from_numpy(...)`, `torch.as_tensor(...)`, `torch.tensor(...)` of one value."""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == torch
        and call.func.attr in _BACK
        and len(call.args) == 1
        and all(k.arg in _KEYWORDS for k in call.keywords)
        and _leaves(call.args[0])
    )


def propose(site: Site) -> Rewrite | Declined | None:
    statement = site.statement_at()
    # the calls around the finding, then the rest of its statement (NumPy fails on the value inside its own call)
    calls = site.enclosing(ast.Call) + [n for n in ast.walk(statement or ast.Pass()) if isinstance(n, ast.Call)]
    leaving = next((c for c in calls if _leaves(c)), None)
    torch = site.torch_name()
    back = next((c for c in calls if torch is not None and _back(site, torch, c)), None)
    if leaving is None and back is None:
        return None
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    if not isinstance(back, ast.Call):
        assert isinstance(leaving, ast.Call) and isinstance(leaving.func, ast.Attribute)
        return Declined(
            TITLE,
            f"the value leaves torch (`.{leaving.func.attr}()`) for code that is not torch's: no torch form of that "
            "code is known here",
        )
    inner = back.args[0]
    assert isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
    assert isinstance(back.func, ast.Attribute)
    text = site.atom(inner.func.value)
    copies = _BACK[back.func.attr]
    if copies or inner.func.attr == "tolist":
        text += ".clone()" if text.endswith(".detach()") else ".detach().clone()"
    if back.keywords:
        text += f".to({', '.join(site.segment(k) for k in back.keywords)})"
    return Rewrite(
        TITLE,
        f"The value stays a tensor instead of going through `.{inner.func.attr}()` and back: the same values, "
        "one graph, no copy to the host (it stays on the tensor's device).",
        [site.replace(back, text)],
    )

"""An in-place update in `forward` (`x += 1`, `x.add_(y)`) → its out-of-place form bound to the same name
(`x = x + 1`, `x = x.add(y)`): the same values for every later use of the name, and a graph of values only,
which fx passes may reorder and export records without a mutation.

Where the name is an argument of the method, the caller's own tensor is what the original changes: the fixed
code leaves it as it was. That is a change a caller can see, so it is said in the fix and declared to the proof
(which checks that the caller's tensors after the call differ in that argument only), and the fix is declined
where a caller in the file reads the argument after the call. A name that is a view of an input or of module
state is not declared: the proof's input and state checks fail for it, and nothing is offered.
"""

from __future__ import annotations

import ast

import torch

from fxlens.worker.fixes.sites import BINARY_OPS, Declined, Rewrite, Site, holds

TITLE = "Update out of place"


def applies(site: Site) -> bool:
    return site.diagnostic.category in ("in-place", "write-through-view")


def _out_of_place(site: Site, statement: ast.stmt) -> tuple[str, str] | None:
    """(the name updated, the statement that rebinds it instead)."""
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        name, op = statement.target.id, BINARY_OPS.get(type(statement.op))
        return (name, f"{name} = {name} {op} {site.atom(statement.value)}") if op else None
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    func = statement.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    method = func.attr
    if not (method.endswith("_") and not method.endswith("__") and hasattr(torch.Tensor, method[:-1])):
        return None
    call = site.segment(statement.value)
    head = site.segment(func)
    name = func.value.id
    return name, f"{name} = {name}.{method[:-1]}{call[len(head) :]}"


def _parameters(function: ast.FunctionDef) -> list[str]:
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)][1:]


def _rebound_before(function: ast.FunctionDef, name: str, line: int) -> bool:
    """`name` is assigned before `line`: it no longer holds the caller's tensor (a view of it is left to the
    proof's input check)."""
    return any(
        isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name and node.lineno < line
        for node in ast.walk(function)
    )


def _caller_reads(site: Site, index: int, name: str) -> str:
    """Where a class of the file calls this one and reads, after the call, what it passed as `name`."""
    owned = {
        target.attr
        for cls in site.tree.body
        if isinstance(cls, ast.ClassDef)
        for node in ast.walk(cls)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == site.cls.name
        for target in node.targets
        if isinstance(target, ast.Attribute)
    }
    for cls in (c for c in site.tree.body if isinstance(c, ast.ClassDef)):
        for function in (f for f in cls.body if isinstance(f, ast.FunctionDef)):
            for call in (c for c in ast.walk(function) if isinstance(c, ast.Call)):
                func = call.func
                if not (isinstance(func, ast.Attribute) and func.attr in owned):
                    continue
                passed = call.args[index] if index < len(call.args) else None
                passed = next((k.value for k in call.keywords if k.arg == name), passed)
                if not isinstance(passed, ast.Name):
                    continue
                later = [
                    n.lineno
                    for n in ast.walk(function)
                    if isinstance(n, ast.Name)
                    and n.id == passed.id
                    and isinstance(n.ctx, ast.Load)
                    and n.lineno > (call.end_lineno or call.lineno)
                ]
                if later:
                    return f"`{cls.name}.{function.name}` reads `{passed.id}` after calling it (line {later[0]})"
    return ""


def propose(site: Site) -> Rewrite | Declined | None:
    statement = site.statement_at()
    if statement is None:
        return None
    rewritten = _out_of_place(site, statement)
    if rewritten is None:
        return None
    name, text = rewritten
    d = site.diagnostic
    function = next((f for f in site.functions() if holds(f, d.line, d.col)), None)
    parameters = _parameters(function) if function is not None else []
    edit = [site.replace(statement, text)]
    if name not in parameters or function is None or _rebound_before(function, name, statement.lineno):
        return Rewrite(TITLE, "The same values under the same name, computed out of place: no tensor is mutated.", edit)
    relied = _caller_reads(site, parameters.index(name), name)
    if relied:
        return Declined(TITLE, f"the caller relies on the update of its tensor `{name}`: {relied}")
    return Rewrite(
        TITLE,
        f"`{name}` is computed out of place: the values forward uses are the same, but the caller's own tensor "
        f"`{name}` is no longer changed by the call (no caller in this file reads it afterwards; one elsewhere that "
        "does would see its old values).",
        edit,
        changes_inputs=(name,),
    )

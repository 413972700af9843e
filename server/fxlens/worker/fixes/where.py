"""A data-dependent `if` or ternary on a tensor → `torch.where(cond, a, b)`: both sides computed, one selected.

Offered where each branch is one value (an assignment to the same name, a `return`, an `elif` chain of
them, or the ternary's two sides) that is side-effect free and cheap: computing both costs at most a few
calls more. A branch that assigns module state (`self.count += 1`), calls an in-place op or does several
things is declined, and the diagnostic says why.
"""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Declined, Rewrite, Site, calls, pure, replace_range

TITLE = "Replace with torch.where"
MAX_CALLS = 4  # per branch: more than that, computing both sides is no longer cheap


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "data-dependent-control-flow" or (d.category == "graph-break" and d.gb_id == "GB0170")


def _branch_value(body: list[ast.stmt]) -> tuple[str, ast.expr] | str:
    """("name", value) for `name = value`, ("return", value) for `return value`; else why not (a str)."""
    if len(body) != 1:
        return f"a branch runs {len(body)} statements"
    stmt = body[0]
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            return target.id, stmt.value
        return f"a branch assigns `{ast.unparse(target)}`, which torch.where cannot select"
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return "return", stmt.value
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Attribute):
        return f"a branch changes module state (`{ast.unparse(stmt.target)}`)"
    return f"a branch is a `{type(stmt).__name__}` statement, not one value"


def _chain(site: Site, torch: str, node: ast.If) -> tuple[str, str] | str:
    """(kind, the where expression) for an `if`/`elif`/`else` chain of single values of one kind."""
    then = _branch_value(node.body)
    if isinstance(then, str):
        return then
    kind, value = then
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        rest = _chain(site, torch, node.orelse[0])
        if isinstance(rest, str):
            return rest
        if rest[0] != kind:
            return "the branches do not assign the same name"
        otherwise = rest[1]
    elif node.orelse:
        other = _branch_value(node.orelse)
        if isinstance(other, str):
            return other
        if other[0] != kind:
            return "the branches do not assign the same name"
        otherwise = _side(site, other[1])
    elif kind != "return":
        otherwise = kind  # `if c: x = a` keeps x otherwise
    else:
        return "the `if` returns on one side only"
    why = pure(value) or pure(node.test)
    if why:
        return f"a branch {why}"
    if calls(value) > MAX_CALLS:
        return f"a branch makes {calls(value)} calls: computing both sides would not be cheap"
    return kind, f"{torch}.where({_side(site, node.test)}, {_side(site, value)}, {otherwise})"


def _side(site: Site, node: ast.expr) -> str:
    text = site.segment(node)
    return f"({text})" if isinstance(node, (ast.IfExp, ast.Lambda, ast.NamedExpr)) else text


def propose(site: Site) -> Rewrite | Declined | None:
    torch = site.torch_name()
    found = next(iter(site.enclosing((ast.If, ast.IfExp))), None)
    if found is None:
        return None
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    if isinstance(found, ast.IfExp):
        why = pure(found.body) or pure(found.orelse) or pure(found.test)
        if why:
            return Declined(TITLE, f"a side {why}")
        if max(calls(found.body), calls(found.orelse)) > MAX_CALLS:
            return Declined(TITLE, "a side makes several calls: computing both sides would not be cheap")
        text = f"{torch}.where({_side(site, found.test)}, {_side(site, found.body)}, {_side(site, found.orelse)})"
        return Rewrite(TITLE, _WHAT, [site.replace(found, text)])
    assert isinstance(found, ast.If)
    chain = _chain(site, torch, found)
    if isinstance(chain, str):
        return Declined(TITLE, chain)
    kind, where = chain
    statement = f"return {where}" if kind == "return" else f"{kind} = {where}"
    return Rewrite(TITLE, _WHAT, [replace_range(site.text, found, found, statement)])


_WHAT = (
    "Both branches are computed and `torch.where` selects by the condition, element by element: one graph "
    "for both outcomes, at the cost of computing the branch not taken."
)

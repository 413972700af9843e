"""A data-dependent `if` or ternary on a tensor → `torch.where(cond, a, b)`: both sides computed, one selected.

Offered where each branch is one value (an assignment or augmented assignment to the same name, a `return`, an
`if` that returns followed by a `return`, an `elif` chain of them, or the ternary's two sides) that is
side-effect free and cheap: computing both costs at most a few calls more. A branch that assigns module state
(`self.count += 1`), calls an in-place op or does several things is declined, and the diagnostic says why.
"""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import BINARY_OPS, Declined, Rewrite, Site, calls, pure, replace_range

TITLE = "Replace with torch.where"
MAX_CALLS = 4  # per branch: more than that, computing both sides is no longer cheap


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "data-dependent-control-flow" or (d.category == "graph-break" and d.gb_id == "GB0170")


# a branch's one value: (what it sets: a name or "return", its expression's text, the node to check for purity)
Value = tuple[str, str, ast.AST]


def _branch_value(site: Site, body: list[ast.stmt]) -> Value | str:
    """The branch's one value; else why it has none (a str)."""
    if len(body) != 1:
        return f"a branch runs {len(body)} statements (torch.cond takes such branches as functions)"
    stmt = body[0]
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            return target.id, _side(site, stmt.value), stmt.value
        if isinstance(target, ast.Attribute):
            return f"a branch changes module state (`{ast.unparse(target)}`)"
        return f"a branch assigns `{ast.unparse(target)}`, which torch.where cannot select"
    if isinstance(stmt, ast.AugAssign):
        if isinstance(stmt.target, ast.Name) and type(stmt.op) in BINARY_OPS:
            name, op = stmt.target.id, BINARY_OPS[type(stmt.op)]
            return name, f"{name} {op} ({site.segment(stmt.value)})", stmt.value
        return f"a branch changes module state (`{ast.unparse(stmt.target)}`)"
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return "return", _side(site, stmt.value), stmt.value
    return f"a branch is a `{type(stmt).__name__}` statement, not one value"


def _side(site: Site, node: ast.expr) -> str:
    text = site.segment(node)
    return f"({text})" if isinstance(node, (ast.IfExp, ast.Lambda, ast.NamedExpr)) else text


def _checked(value: Value) -> str:
    """Why computing the branch's value in every case is not fine ("" when it is)."""
    why = pure(value[2])
    if why:
        return f"a branch {why}"
    if calls(value[2]) > MAX_CALLS:
        return f"a branch makes {calls(value[2])} calls: computing both sides would not be cheap (torch.cond would)"
    return ""


def _chain(site: Site, torch: str, node: ast.If, after: ast.stmt | None) -> tuple[str, str] | str:
    """(what it sets, the where expression) for an `if`/`elif`/`else` chain of single values of one kind."""
    then = _branch_value(site, node.body)
    if isinstance(then, str):
        return then
    kind = then[0]
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        rest = _chain(site, torch, node.orelse[0], after)
        if isinstance(rest, str):
            return rest
        if rest[0] != kind:
            return "the branches do not set the same name"
        otherwise = rest[1]
    elif node.orelse:
        other = _branch_value(site, node.orelse)
        if isinstance(other, str):
            return other
        if other[0] != kind:
            return "the branches do not set the same name"
        why = _checked(other)
        if why:
            return why
        otherwise = other[1]
    elif kind != "return":
        otherwise = kind  # `if c: x = a` keeps x otherwise
    elif isinstance(after, ast.Return) and after.value is not None:
        otherwise = _side(site, after.value)  # `if c: return a` then `return b`
    else:
        return "the `if` returns on one side only"
    why = pure(node.test) or _checked(then)
    if why:
        return why if why.startswith("a branch") else f"the condition {why}"
    return kind, f"{torch}.where({_side(site, node.test)}, {then[1]}, {otherwise})"


def _next_statement(site: Site, statement: ast.stmt) -> ast.stmt | None:
    for node in ast.walk(site.tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and statement in body:
                index = body.index(statement)
                return body[index + 1] if index + 1 < len(body) else None
    return None


def _chain_head(site: Site, node: ast.If) -> ast.If:
    """The `if` an `elif` belongs to: an `elif` is the one statement of the `orelse` of the `if` above it, and
    rewriting it alone would overwrite what that `if`'s first branch set."""
    for parent in ast.walk(site.tree):
        if isinstance(parent, ast.If) and len(parent.orelse) == 1 and parent.orelse[0] is node:
            return _chain_head(site, parent)
    return node


def propose(site: Site) -> Rewrite | Declined | None:
    torch = site.torch_name()
    found = next(iter(site.enclosing((ast.If, ast.IfExp))), None)
    if found is None:
        return None
    if isinstance(found, ast.If):
        found = _chain_head(site, found)  # (dynamo breaks again at an `elif`, in the frame that resumes there)
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
    after = _next_statement(site, found)
    chain = _chain(site, torch, found, after)
    if isinstance(chain, str):
        return Declined(TITLE, chain)
    kind, where = chain
    if kind == "return":
        last = found if found.orelse else after  # (`if c: return a` then `return b`: both statements go)
        assert last is not None
        return Rewrite(TITLE, _WHAT, [replace_range(site.text, found, last, f"return {where}")])
    return Rewrite(TITLE, _WHAT, [replace_range(site.text, found, found, f"{kind} = {where}")])


_WHAT = (
    "Both branches are computed and `torch.where` selects by the condition, element by element: one graph "
    "for both outcomes, at the cost of computing the branch not taken."
)

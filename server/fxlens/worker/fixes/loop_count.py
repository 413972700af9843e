"""A loop count made of a tensor's condition (`steps = int(h.abs().sum() > 10.0) + 1`, then `for _ in range(steps):`)
→ the loop run its fixed number of times, and its one data-dependent run computed and kept by `torch.where`:

    more = h.abs().sum() > 10.0
    h = h * 0.9
    h = torch.where(more, h * 0.9, h)

`int()` of a comparison is 0 or 1, so the loop runs `k` or `k + 1` times: the last run is the only one data
decides. Offered where the count is read by that loop alone, the loop does not use its variable, and its body is
cheap and side-effect free (assignments to local names: no module state, no in-place op, no `break`); else the
finding says why. Any other count from a tensor's value (`int(t)`) could be any number of runs: no graph holds it.
"""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import BINARY_OPS, Declined, Rewrite, Site, calls, pure

TITLE = "Run the last iteration with torch.where"
MAX_CALLS = 4  # in the body: it runs once more on every call


def applies(site: Site) -> bool:
    return site.diagnostic.category in ("proxy-as-number", "graph-break", "data-dependent-control-flow")


def _count(site: Site, value: ast.expr) -> tuple[ast.expr, int] | None:
    """(the condition, k) of `int(cond) + k`, `k + int(cond)` or `int(cond)`, where cond is a comparison."""
    k = 0
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        for call, number in ((value.left, value.right), (value.right, value.left)):
            if isinstance(number, ast.Constant) and type(number.value) is int and number.value >= 0:
                value, k = call, number.value
                break
        else:
            return None
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("int", "bool")
        and value.func.id not in site.namespace
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Compare)
    ):
        return None
    return value.args[0], k


def _function(site: Site, node: ast.AST) -> ast.FunctionDef | None:
    return next((f for f in site.functions() if any(n is node for n in ast.walk(f))), None)


def _loop(function: ast.FunctionDef, statement: ast.stmt, name: str) -> ast.For | None:
    """The `for ... in range(name):` after `statement` in the same block."""
    for block in (getattr(n, f, None) for n in ast.walk(function) for f in ("body", "orelse")):
        if isinstance(block, list) and statement in block:
            for later in block[block.index(statement) + 1 :]:
                it = getattr(later, "iter", None)
                if (
                    isinstance(later, ast.For)
                    and isinstance(it, ast.Call)
                    and isinstance(it.func, ast.Name)
                    and it.func.id == "range"
                    and [ast.dump(a) for a in it.args] == [ast.dump(ast.Name(name, ast.Load()))]
                ):
                    return later
    return None


def _names(nodes: list[ast.stmt] | ast.AST, context: type) -> set[str]:
    roots = nodes if isinstance(nodes, list) else [nodes]
    return {n.id for root in roots for n in ast.walk(root) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def _why_not(function: ast.FunctionDef, loop: ast.For, name: str) -> str:
    """Why the loop's last run cannot be selected by torch.where ("" when it can)."""
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
    if len(uses) != 2:  # its assignment and the range() that reads it
        return f"the count `{name}` is used beyond the loop's `range({name})`"
    if loop.orelse:
        return "the loop has an `else` block"
    loop_names = _names(loop.target, ast.Store)
    if loop_names & _names(loop.body, ast.Load) - {"_"}:
        return f"the body reads the loop variable `{ast.unparse(loop.target)}`: each run differs"
    for stmt in loop.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        target = stmt.target if isinstance(stmt, ast.AugAssign) and type(stmt.op) in BINARY_OPS else target
        if not isinstance(target, ast.Name):
            what = ast.unparse(target) if target is not None else type(stmt).__name__
            return f"the body does more than set local names (`{what}`): torch.where cannot select it"
        why = pure(stmt)
        if why:
            return f"the body {why}"
    if calls(ast.Module(loop.body, [])) > MAX_CALLS:
        return f"the body makes more than {MAX_CALLS} calls: running it once more on every call is not cheap"
    return ""


def _selected(function: ast.FunctionDef, loop: ast.For) -> list[str] | str:
    """The names the last run sets that code after the loop reads: each must have a value before it."""
    before = {a.arg for a in function.args.args + function.args.kwonlyargs} | {
        n.id
        for stmt in ast.walk(function)
        if isinstance(stmt, ast.stmt) and stmt is not function and stmt.lineno < loop.lineno
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    after = {
        n.id
        for n in ast.walk(function)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.lineno > (loop.end_lineno or loop.lineno)
    }
    assigned = sorted(_names(loop.body, ast.Store), key=[n.id for n in ast.walk(loop) if isinstance(n, ast.Name)].index)
    missing = [n for n in assigned if n in after and n not in before]
    if missing:
        return f"`{missing[0]}` is first set in the loop and read after it: with no run it has no value"
    return [n for n in assigned if n in before]


def _value(site: Site, stmt: ast.stmt) -> str:
    """The value a body statement sets its name to, an augmented assignment written out (`h *= 0.9` → `h * (0.9)`):
    the value before the last run is kept to select from, which an in-place update would change."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return f"{stmt.target.id} {BINARY_OPS[type(stmt.op)]} ({site.segment(stmt.value)})"
    assert isinstance(stmt, ast.Assign)
    return site.segment(stmt.value)


def _set(site: Site, stmt: ast.stmt) -> str:
    target = stmt.target if isinstance(stmt, ast.AugAssign) else stmt.targets[0]  # type: ignore[attr-defined]
    return f"{site.segment(target)} = {_value(site, stmt)}"


def _free(function: ast.FunctionDef, wanted: str) -> str:
    taken = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {a.arg for a in function.args.args}
    name, number = wanted, 2
    while name in taken:
        name, number = f"{wanted}_{number}", number + 1
    return name


def propose(site: Site) -> Rewrite | Declined | None:
    statement = site.statement_at()
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    counted = _count(site, statement.value)
    function = _function(site, statement)
    if not isinstance(target, ast.Name) or counted is None or function is None:
        return None
    loop = _loop(function, statement, target.id)
    if loop is None:
        return None
    torch = site.torch_name()
    why = "the file does not import torch" if torch is None else _why_not(function, loop, target.id)
    selected = _selected(function, loop) if not why else []
    if isinstance(selected, str) or why:
        return Declined(TITLE, why or str(selected))
    condition, k = counted
    more = _free(function, "one_more")
    indent = " " * loop.col_offset
    lines: list[str] = []
    if k > 1:
        lines.append(f"for {site.segment(loop.target)} in range({k}):")
        lines += [f"    {site.segment(stmt)}" for stmt in loop.body]
    elif k == 1:
        lines += [site.segment(stmt) for stmt in loop.body]
    if len(loop.body) == 1 and len(selected) == 1:  # the usual `h = f(h)`: one where around the value
        [name] = selected
        lines.append(f"{name} = {torch}.where({more}, {_value(site, loop.body[0])}, {name})")
    else:
        kept = [f"{name}_before_last" for name in selected]
        lines.append(f"{', '.join(kept)} = {', '.join(selected)}" if selected else "")
        lines += [_set(site, stmt) for stmt in loop.body]
        lines += [f"{name} = {torch}.where({more}, {name}, {old})" for name, old in zip(selected, kept)]
    text = f"\n{indent}".join(line for line in lines if line)
    return Rewrite(
        TITLE,
        f"The loop runs {k} time(s) as before and its one data-dependent run is computed on every call, kept "
        f"where `{site.segment(condition)}` holds: one graph for both counts, at the cost of that run.",
        [site.replace(statement, f"{more} = {site.segment(condition)}"), site.replace(loop, text)],
    )

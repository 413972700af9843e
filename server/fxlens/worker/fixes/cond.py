"""A data-dependent `if` whose branches do several things → `torch.cond(pred, then_branch, else_branch, operands)`:
each branch a local function of the tensors it reads, returning the names it sets that forward reads later
(a name one branch leaves as it was is returned as a copy: torch.cond refuses a branch that returns its own
input). Only the branch taken runs, in eager and in the graph: chosen where torch.where does not fit (a
branch of several statements, or one too costly to compute on both sides).

torch.export and torch.compile trace torch.cond; torch.fx.symbolic_trace does not (it asks the Proxy for a
bool), so the fix never claims the fx finding gone: the proof re-traces fx for new findings only, and says so.
Branches that change module state, update a tensor in place, print, or leave the function (`return` inside
a branch that also sets names, `break`, `raise`) get no fix, and the finding says why.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from fxlens.worker.fixes.sites import BINARY_OPS, Declined, Rewrite, Site, pure, replace_range

TITLE = "Use torch.cond"
_FX = "symbolic_trace cannot trace torch.cond"
_ALLOWED = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass)


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "data-dependent-control-flow" or (d.category == "graph-break" and d.gb_id == "GB0170")


def _why_not(body: list[ast.stmt]) -> str:
    """Why this branch cannot be a function torch.cond runs ("" when it can)."""
    for index, statement in enumerate(body):
        if not isinstance(statement, _ALLOWED):
            return f"a branch has a `{type(statement).__name__}` statement (torch.cond takes straight-line branches)"
        if isinstance(statement, ast.Return) and index != len(body) - 1:
            return "a branch returns before its end"
        if isinstance(statement, ast.Expr) and not isinstance(statement.value, ast.Constant):
            return f"a branch calls `{ast.unparse(statement.value)[:40]}` for its effect, which torch.cond cannot keep"
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        for target in (t for t in targets if t is not None):
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            bad = next((n for n in names if not isinstance(n, ast.Name)), None)
            if bad is not None:
                what = "changes module state" if isinstance(bad, ast.Attribute) else "writes into a tensor"
                return f"a branch {what} (`{ast.unparse(bad)}`): torch.cond branches may not"
        why = pure(statement)
        if why:
            return f"a branch {why}"
    return ""


def _names(nodes: Sequence[ast.AST], context: type[ast.expr_context]) -> list[str]:
    """The names `nodes` store (context ast.Store) or read (ast.Load), in first-seen order."""
    names: list[str] = []
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, context) and node.id not in names:
            names.append(node.id)
    return names


def _bound_before(function: ast.FunctionDef, statement: ast.stmt) -> list[str]:
    """The function's parameters (self aside) and the names it assigns before `statement`."""
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)][1:]
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < statement.lineno:
            names.append(node.id)
    return names


def _constant(function: ast.FunctionDef, name: str) -> bool:
    """`name` is a number or a string the function sets or annotates: closed over, never an operand (torch.cond's
    operands are tensors)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, (ast.Constant, ast.UnaryOp)) and not isinstance(node.value, ast.Call):
                return True
        if isinstance(node, ast.arg) and node.arg == name and node.annotation is not None:
            return ast.unparse(node.annotation) in ("int", "float", "bool", "str")
    return False


def _function_text(site: Site, name: str, operands: list[str], body: list[ast.stmt], returned: str, indent: str) -> str:
    lines = site.text.splitlines()
    inner = indent + "    "
    out = [f"def {name}({', '.join(operands)}):"]
    for statement in body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            target, op = statement.target.id, BINARY_OPS.get(type(statement.op))
            if op is None:
                raise ValueError(f"no out-of-place form of `{ast.unparse(statement)}`")
            out.append(f"{inner}{target} = {target} {op} {site.atom(statement.value)}")
            continue
        if isinstance(statement, ast.Return):
            continue  # (the branch's value is the function's return below)
        out += [line.rstrip() for line in lines[statement.lineno - 1 : statement.end_lineno]]
    out.append(f"{inner}return {returned}")
    return "\n".join(out)


def _returned(body: list[ast.stmt], outputs: list[str], site: Site) -> str:
    """What the branch function returns: a value that is one of its operands as it came in (a name the branch
    leaves alone, `out = x`, `return x`) is returned as a copy, since torch.cond refuses an output that aliases
    an input."""
    last = body[-1] if body else None
    if isinstance(last, ast.Return) and last.value is not None:
        value = site.segment(last.value)
        return f"{value}.clone()" if isinstance(last.value, ast.Name) else value
    computed = {
        target.id
        for statement in body
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name))
        for node in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        for target in (node.elts if isinstance(node, ast.Tuple) else [node])
        if isinstance(target, ast.Name)
    }
    values = [name if name in computed else f"{name}.clone()" for name in outputs]
    return values[0] if len(values) == 1 else f"({', '.join(values)})"


def _fresh(function: ast.FunctionDef, wanted: str) -> str:
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(function) if isinstance(n, ast.FunctionDef)
    }
    name, number = wanted, 2
    while name in used:
        name, number = f"{wanted}_{number}", number + 1
    return name


def propose(site: Site) -> Rewrite | Declined | None:
    found = next(iter(site.enclosing(ast.If)), None)
    if not isinstance(found, ast.If):
        return None
    function = next((f for f in site.functions() if f.lineno <= found.lineno <= (f.end_lineno or 0)), None)
    if function is None:
        return None
    torch = site.torch_name()
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    orelse = found.orelse
    if len(orelse) == 1 and isinstance(orelse[0], ast.If):
        return Declined(TITLE, "an `elif` chain of several statements: torch.cond takes two branches (nest them)")
    why = _why_not(found.body) or _why_not(orelse) or (f"the condition {pure(found.test)}" if pure(found.test) else "")
    if why:
        return Declined(TITLE, why)
    returns = [isinstance(b[-1], ast.Return) for b in (found.body, orelse) if b]
    if any(returns) and not (orelse and all(returns)):
        return Declined(TITLE, "one branch returns and the other goes on: torch.cond needs both to give values")
    if set(site.levels) <= {"fx"}:  # (what would keep the semantics said first: it holds at every level)
        return Declined(TITLE, f"{_FX}, and only fx reports this branch: no rewrite here removes the fx failure")
    bound = _bound_before(function, found)
    later = _names(
        [n for n in ast.walk(function) if isinstance(n, ast.stmt) and n.lineno > (found.end_lineno or 0)], ast.Load
    )
    outputs = [] if all(returns) and returns else [n for n in _names(found.body + orelse, ast.Store) if n in later]
    missing = [
        n for n in outputs if n not in bound and not all(n in _names(b, ast.Store) for b in (found.body, orelse))
    ]
    if missing:
        return Declined(TITLE, f"`{missing[0]}` is set by one branch only and has no value before the `if`")
    if not outputs and not any(returns):
        return Declined(TITLE, "the branches set nothing forward reads afterwards")
    read = _names([*found.body, *orelse], ast.Load) + [n for n in outputs if n in bound]
    operands = [n for n in dict.fromkeys(read) if n in bound and not _constant(function, n)]
    indent = " " * found.col_offset
    then_name, else_name = _fresh(function, "then_branch"), _fresh(function, "else_branch")
    texts = [
        _function_text(site, then_name, operands, found.body, _returned(found.body, outputs, site), indent),
        _function_text(site, else_name, operands, orelse, _returned(orelse, outputs, site), indent),
    ]
    packed = f"({', '.join(operands)}{',' if len(operands) == 1 else ''})"
    call = f"{torch}.cond({site.segment(found.test)}, {then_name}, {else_name}, {packed})"
    head = "return" if not outputs else f"{', '.join(outputs)} ="
    text = f"\n\n{indent}".join(texts) + f"\n\n{indent}{head} {call}"
    return Rewrite(
        TITLE,
        "Each branch becomes a function of the tensors it reads and torch.cond runs the one the condition picks: "
        "one graph for both outcomes in torch.export and torch.compile, only the branch taken computed. "
        f"torch.fx.symbolic_trace still fails here ({_FX}). A name a branch leaves as it was is returned as a copy.",
        [replace_range(site.text, found, found, text)],
        unclaimed={"fx": _FX} if "fx" in site.levels else {},
    )

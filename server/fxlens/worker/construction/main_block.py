"""A construction found in the file's own `if __name__ == "__main__":` block, as one expression.

A training script builds its model in its `__main__` block, from what the lines above it made
(`args = get_args()`, `envs = gym.vector.SyncVectorEnv(...)`, `agent = ActorCritic(envs)`). fxlens never
runs the block. It reads it: the call that builds the class, with the assignments that call needs put
in place of their names, is one expression (`ActorCritic(gym.vector.SyncVectorEnv([...get_args()...]))`),
evaluated like a directive and shown as the directive that pins the build. Only what the call needs
runs, and only what the `safe` policy runs at top level, assignments: nothing after the call (the
training loop), no bare call, no `with` block's enter and exit. A name whose object a statement changes in
place (`cfg.depth = 4`, `parser.add_argument(...)`) is not inlined: the call would get another object. A call
inside a top-level `for` loop of the block takes the loop's first item (`for preset in PRESETS:` ->
`next(iter(PRESETS))`).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any, TypeGuard

from torch import nn

from fxlens.worker.construction.package_calls import Found
from fxlens.worker.load.loader import is_main_guard


def build_by_main_block(
    cls: type[nn.Module], tree: ast.Module, namespace: dict, path: str, on_device: Callable[[Callable[[], Any]], Any]
) -> Found | None:
    """`cls` as the file's `__main__` block builds it, or None (no call there builds it, or it fails here)."""
    found = construction(tree, cls.__name__)
    if found is None:
        return None
    call, expression = found
    try:
        instance = on_device(lambda: eval(compile(expression, path, "eval"), namespace))
    except (Exception, SystemExit):  # noqa: BLE001 - the script's way does not work here (argparse exits too)
        return None
    if not isinstance(instance, cls):
        return None
    return Found(
        instance, f"built by the `__main__` block: `{ast.unparse(call)[:80]}` (line {call.lineno})", expression
    )


def construction(tree: ast.Module, name: str) -> tuple[ast.Call, str] | None:
    """(the first call in the `__main__` block that builds `name`, that call as one expression with the
    block's assignments it needs in place of their names), or None (no such call, or it needs a name
    that only a statement other than an assignment sets)."""
    guard = next((stmt for stmt in tree.body if is_main_guard(stmt)), None)
    return _in_block(guard.body, name, {}) if guard is not None else None


def _in_block(body: list[ast.stmt], name: str, known: dict[str, ast.expr]) -> tuple[ast.Call, str] | None:
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)):
            call = next((node for node in ast.walk(stmt) if _builds(node, name)), None)
            if call is not None:
                inlined = _inlined(call, known)
                return (call, ast.unparse(inlined)) if inlined is not None else None
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
            first = ast.parse(f"next(iter(({ast.unparse(stmt.iter)})))", mode="eval").body
            found = _in_block(stmt.body, name, {**known, stmt.target.id: _inlined(first, known) or _UNKNOWN})
            if found is not None:
                return found
        elif isinstance(stmt, ast.With):
            found = _in_block(stmt.body, name, known)
            if found is not None:
                return found
        _learn(stmt, known)
    return None


# a name the block sets some other way than by an assignment fxlens can inline (a loop over it, `x += 1`)
_UNKNOWN = ast.Name("<unknown>")


def _root_name(node: ast.expr) -> str | None:
    """`cfg` of `cfg.model.depth`, `cfg["depth"]`, `parser.add_argument`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _changed(stmt: ast.stmt) -> set[str]:
    """The names whose object `stmt` may change in place: `cfg.depth = 4`, `cfg["depth"] += 1`, and a
    method called as a statement (`parser.add_argument(...)`, `cfg.update(...)`); not `print(args)`."""
    targets = (
        stmt.targets
        if isinstance(stmt, ast.Assign)
        else [stmt.target]
        if isinstance(stmt, (ast.AnnAssign, ast.AugAssign))
        else []
    )
    changed = {_root_name(t) for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))}
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        changed.add(_root_name(stmt.value.func.value))
    return {name for name in changed if name}


def _learn(stmt: ast.stmt, known: dict[str, ast.expr]) -> None:
    """What `stmt` leaves each name it sets standing for: its value for `x = ...`, unknown otherwise
    (also a name whose object it changes in place: the inlined expression would not say so)."""
    for name in _changed(stmt):
        known[name] = _UNKNOWN
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    names = [target.id for target in targets if isinstance(target, ast.Name)]
    inlined = _inlined(value, known) if value is not None else None
    if targets and len(names) == len(targets) and inlined is not None:
        for assigned in names:
            known[assigned] = inlined
        return
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            known[node.id] = _UNKNOWN


def _builds(node: ast.AST, name: str) -> TypeGuard[ast.Call]:
    """`Name(...)`, or a classmethod of it: `Name.from_preset(...)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name
    )


def _inlined(expr: ast.expr, known: dict[str, ast.expr]) -> ast.expr | None:
    """`expr` with each name the block assigned replaced by what it was assigned; None when a name it
    reads was set in a way that cannot be inlined, or when it binds a name of its own that it would
    shadow (a comprehension or lambda over `args` inside an expression that reads the block's `args`)."""
    expr = copy.deepcopy(expr)
    bound = {node.id for node in ast.walk(expr) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    bound |= {
        arg.arg
        for node in ast.walk(expr)
        if isinstance(node, ast.Lambda)
        for arg in ast.walk(node.args)
        if isinstance(arg, ast.arg)
    }
    read = {node.id for node in ast.walk(expr) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    if any(known.get(n) is _UNKNOWN for n in read) or bound & (read & set(known)):
        return None

    class Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            value = known.get(node.id) if isinstance(node.ctx, ast.Load) else None
            return copy.deepcopy(value) if value is not None else node

    return ast.fix_missing_locations(Replace().visit(expr))

"""No module-level mutable state in server/fxlens: no `global` statement, and no function changes what a
module-level name holds (`NAMES.append(...)`, `TABLE[key] = ...`, `STATE.count += 1`, `del CACHE[key]`).
A module's tables are written once, where they are defined; what changes lives in an object someone owns.

A memo of what never changes while the process runs (`functools.lru_cache` over a file of the torch install)
is not counted: nothing the program does reads differently because of it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "fxlens"
# the methods that change a list, dict, set or deque in place
MUTATING = {
    "append",
    "appendleft",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "popleft",
    "remove",
    "discard",
    "clear",
    "sort",
    "reverse",
}

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        else:
            continue
        names |= {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
    return names


def _local_names(function: Function) -> set[str]:
    """The parameters and the names the function binds itself (a local of the same name is not the module's)."""
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    bound = {a.arg for a in every if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


def _changed_root(node: ast.AST) -> str | None:
    """The name whose contents `node` changes (`X` of `X.append(...)`, `X[k] = v`, `X.a.b = v`), if any."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING:
        target: ast.AST = node.func.value
    elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        stores = [t for t in targets if isinstance(t, (ast.Subscript, ast.Attribute))]
        if not stores:
            return None
        target = stores[0].value
    else:
        return None
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def module_state(source: str, where: str = "<source>") -> list[str]:
    """Each place in `source` that keeps state at module level: a `global`, or a function changing a
    module-level name's contents."""
    tree = ast.parse(source, where)
    module = _module_names(tree)
    found = [
        f"{where}:{node.lineno} global {', '.join(node.names)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Global)
    ]
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        shared = module - _local_names(function)
        for node in ast.walk(function):
            root = _changed_root(node)
            if root in shared:
                found.append(f"{where}:{node.lineno} changes module-level {root}")
    return sorted(set(found))


def test_no_module_of_server_fxlens_keeps_state_at_module_level():
    found = [
        entry
        for path in sorted(PACKAGE.rglob("*.py"))
        for entry in module_state(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    ]
    assert found == [], "\n".join(found)


def test_the_finder_sees_each_way_of_keeping_state_and_not_a_local_of_the_same_name():
    source = (
        "SEEN = []\nTABLE = {}\nCOUNT = 0\n"
        "class Box:\n    pass\nBOX = Box()\n"
        "def remember(x):\n    SEEN.append(x)\n"
        "def file(k, v):\n    TABLE[k] = v\n"
        "def bump():\n    global COUNT\n    COUNT += 1\n"
        "def fill():\n    BOX.items = []\n"
        "def forget(k):\n    del TABLE[k]\n"
        "def mine(SEEN):\n    SEEN.append(1)\n"
        "def own():\n    TABLE = {}\n    TABLE['a'] = 1\n"
        "def read():\n    return TABLE.get('a'), sorted(SEEN)\n"
    )
    assert module_state(source) == [
        "<source>:10 changes module-level TABLE",
        "<source>:12 global COUNT",
        "<source>:15 changes module-level BOX",
        "<source>:17 changes module-level TABLE",
        "<source>:8 changes module-level SEEN",
    ]

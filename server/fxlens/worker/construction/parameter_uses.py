"""How a class's `__init__` uses each of its parameters (called, indexed, compared with strings, used as a
number), read from its syntax tree, and the base-class parameters it hands on through `**kwargs`: what
guessing its constructor arguments goes by.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field

from torch import nn

# the containers of modules a parameter handed to holds modules (`nn.ModuleList(blocks)`)
_CONTAINERS = {"ModuleList", "Sequential", "ModuleDict"}


@dataclass
class Use:
    """How `__init__` uses one parameter."""

    literals: list[str] = field(default_factory=list)  # strings it is compared with
    attributes: set[str] = field(default_factory=set)  # `block.expansion`
    called: bool = False  # `block(...)`
    indexed: int = -1  # highest constant index read, `layers[3]`
    iterated: bool = False  # `for d in depths`, `len(depths)`, `zip(dims, ...)`
    truth: bool = False  # `if flag:`, `not flag`, `flag and ...`
    numeric: bool = False  # arithmetic, `range(n)`, or an argument of a call
    modules: bool = False  # handed to a container of modules: `nn.ModuleList(blocks)`, `nn.Sequential(*layers)`


def uses_in(init: ast.FunctionDef | None, names: list[str]) -> dict[str, Use]:
    found = {name: Use() for name in names}
    if init is None:
        return found

    def param(node: ast.AST) -> Use | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # `norm.lower() == ...`
            node = node.func.value
        return found.get(node.id) if isinstance(node, ast.Name) else None

    for node in ast.walk(init):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            strings = [
                s.value
                for side in sides
                for s in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])
                if isinstance(s, ast.Constant) and isinstance(s.value, str)
            ]
            for side in sides:
                use = param(side)
                if use is not None:
                    use.literals += [s for s in strings if s not in use.literals]
        elif isinstance(node, ast.Subscript):
            use = param(node.value)
            if use is not None:
                index = node.slice
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    use.indexed = max(use.indexed, index.value)
                else:
                    use.iterated = True
            if isinstance(node.value, ast.Dict) and (use := param(node.slice)) is not None:  # `{"relu": ...}[act]`
                use.literals += [
                    k.value
                    for k in node.value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value not in use.literals
                ]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (use := param(node.value)) is not None
        ):
            use.attributes.add(node.attr)
        elif isinstance(node, ast.Call):
            use = param(node.func) if isinstance(node.func, ast.Name) else None
            if use is not None:
                use.called = True
            callee = node.func.id if isinstance(node.func, ast.Name) else ""
            container = (node.func.attr if isinstance(node.func, ast.Attribute) else callee) in _CONTAINERS
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                arg = arg.value if isinstance(arg, ast.Starred) else arg
                use = param(arg) if isinstance(arg, ast.Name) else None
                if use is None:
                    continue
                if container:
                    use.modules = True
                elif callee in ("len", "zip", "enumerate", "list", "tuple", "sum", "reversed", "sorted"):
                    use.iterated = True
                elif callee not in ("isinstance", "getattr", "hasattr", "super", "print"):
                    use.numeric = True
        elif isinstance(node, (ast.For, ast.comprehension)):
            use = param(node.iter) if isinstance(node.iter, ast.Name) else None
            if use is not None:
                use.iterated = True
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)) and (use := param(node.test)) is not None:
            use.truth = True
        elif (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and (use := param(node.operand)) is not None
        ):
            use.truth = True
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                if isinstance(value, ast.Name) and (use := param(value)) is not None:
                    use.truth = True
        elif isinstance(node, ast.BinOp):
            for side in (node.left, node.right):
                if isinstance(side, ast.Name) and (use := param(side)) is not None:
                    use.numeric = True
    return found


def init_of(class_node: ast.ClassDef | None) -> ast.FunctionDef | None:
    if class_node is None:
        return None
    return next((n for n in class_node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def forwarded(cls: type, required: bool = True) -> list[inspect.Parameter]:
    """The (required) parameters of the base class that `cls.__init__(..., **kwargs)` hands on to with
    `super().__init__(..., **kwargs)` and does not pass itself (`SEResNet50(**kwargs)` -> SENet's
    `spatial_dims`, `in_channels`), as keyword-only parameters."""
    init = cls.__dict__.get("__init__")
    try:
        own = inspect.signature(init).parameters if init else {}
        tree = ast.parse(textwrap.dedent(inspect.getsource(init))) if init else None
    except (TypeError, ValueError, OSError, SyntaxError):
        return []
    if tree is None or not any(p.kind == p.VAR_KEYWORD for p in own.values()):
        return []
    call = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "__init__"
            and any(k.arg is None for k in n.keywords)
        ),
        None,
    )
    base = next((b for b in cls.__mro__[1:] if "__init__" in b.__dict__), None)
    if call is None or base is None or base is nn.Module:
        return []
    passed = {k.arg for k in call.keywords if k.arg}
    try:
        # base is a class, its own __init__ the function as written
        theirs = list(inspect.signature(base.__init__).parameters.values())[1 + len(call.args) :]  # type: ignore[misc]
    except (TypeError, ValueError):
        return []
    return [
        p.replace(kind=p.KEYWORD_ONLY)
        for p in theirs
        if (p.default is inspect.Parameter.empty or not required)
        and p.name not in passed
        and p.name not in own
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]

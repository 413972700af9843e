"""How forward uses each of its parameters, read from its source (never run).

What the fx graph cannot say because the trace stops there: a parameter unpacked into several names
(`coords, labels = points`: a tuple), read by keys (`batch["features"]`: a dict), checked against None (an
`Optional` mask: None first), the rank its first uses fix (`B, C, H, W = x.shape`; `q.unsqueeze(0).repeat(B, 1,
1)`), a mask's dtype (`masked_fill(mask, ...)`), the layer it is first handed to (`self.embed(labels)`), and a
`forward(*args, **kwargs)` that hands everything to another method, a list walked beside a list of layers
(`zip(self.lateral, features)`: one item per layer).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch


@dataclass
class Use:
    """What forward's source says of one parameter (or of one item or key of it)."""

    optional: bool = False
    items: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    rank: int | None = None
    dtype: torch.dtype | None = None
    layer: str | None = None  # the attribute of the first `self.<layer>(value)` call
    index: bool = False  # it selects rows of a table: `self.rope[input_pos]`, `mask[None, None, input_pos]`
    # a sequence walked beside a list of layers (`zip(self.lateral, features)`): the i-th layer takes the i-th item
    layers: str | None = None
    # an int (0) or a tuple of that many ints its annotation asks for (`size: Tuple[int, int]`): no tensor
    ints: int | None = None


def handed_on(instance: Any) -> Callable[..., Any] | None:
    """The bound method a `forward(*args, **kwargs)` hands all its arguments to (`self.forward_features(*args,
    **kwargs)`), or None."""
    try:
        params = list(inspect.signature(instance.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    # beside `*args, **kwargs`, only flags with defaults (`forward(self, *args, return_all=False, **kwargs)`)
    if any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is p.empty for p in params):
        return None
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    if star is None:
        return None
    tree = _function(type(instance).forward)
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
            and any(isinstance(a, ast.Starred) and _is_name(a.value, star) for a in node.args)
        ):
            method = getattr(instance, node.func.attr, None)
            return method if callable(method) and inspect.ismethod(method) else None
    return None


def uses(function: Callable[..., Any]) -> dict[str, Use]:
    """Each parameter's use, by name; an item's or key's under `param.item` / `param[key]` names."""
    tree = _function(function)
    if tree is None:
        return {}
    found: dict[str, Use] = {}
    for arg in [*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs]:
        if arg.arg == "self":
            continue
        use = found[arg.arg] = _use(tree, arg.arg, partial(_is_name, name=arg.arg))
        use.optional = use.optional or _optional_annotation(arg.annotation)
        use.dtype = use.dtype or _annotated_dtype(arg.annotation)
        use.ints = _annotated_ints(arg.annotation)
        for item in use.items:
            found[f"{arg.arg}.{item}"] = _use(tree, item, partial(_is_name, name=item))
        for key in use.keys:
            found[f"{arg.arg}[{key}]"] = _use(tree, key, partial(_is_key, param=arg.arg, key=key))
    return found


def _function(function: Any) -> ast.FunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def _is_name(node: ast.AST, name: str | None) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_key(node: ast.AST, param: str, key: str) -> bool:
    """`param["key"]` or `param.get("key")`."""
    if isinstance(node, ast.Subscript) and _is_name(node.value, param):
        return isinstance(node.slice, ast.Constant) and node.slice.value == key
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and _is_name(node.func.value, param)
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == key
    )


def _contains(node: ast.AST, is_it: Callable[[ast.AST], bool]) -> bool:
    """The value itself, or it indexed (`mask[:, None]`)."""
    while isinstance(node, ast.Subscript) and not is_it(node):
        node = node.value
    return is_it(node)


_MASK_CALLS = {"masked_fill", "masked_fill_", "where", "masked_select", "logical_not"}
_REPEATS = {"repeat", "expand"}


def _use(tree: ast.FunctionDef, name: str, is_it: Callable[[ast.AST], bool]) -> Use:
    use = Use()
    nodes = sorted(
        (n for n in ast.walk(tree) if hasattr(n, "lineno")), key=lambda n: (n.lineno, getattr(n, "col_offset", 0))
    )
    for node in nodes:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            if is_it(node.left) and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
                use.optional = True
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            _unpacked(use, node.targets[0], node.value, is_it)
        elif isinstance(node, ast.Subscript) and _is_name(node.value, name) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str) and node.slice.value not in use.keys:
                use.keys.append(node.slice.value)
        elif isinstance(node, ast.Subscript) and any(
            is_it(part) for part in (node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice])
        ):
            use.index = True
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert) and _contains(node.operand, is_it):
            use.dtype = use.dtype or torch.bool
        elif isinstance(node, ast.Call):
            _called(use, node, is_it)
    return use


def _unpacked(use: Use, target: ast.Tuple, value: ast.expr, is_it: Callable[[ast.AST], bool]) -> None:
    names = [elt.id for elt in target.elts if isinstance(elt, ast.Name)]
    if len(names) != len(target.elts):
        return
    if is_it(value) and not use.items:
        use.items = names  # `coords, labels = points`
    shape_of = value.value if isinstance(value, ast.Attribute) and value.attr == "shape" else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size":
        shape_of = value.func.value if not value.args else None
    if shape_of is not None and is_it(shape_of) and use.rank is None:
        use.rank = len(names)  # `B, C, H, W = x.shape`


def _called(use: Use, node: ast.Call, is_it: Callable[[ast.AST], bool]) -> None:
    func = node.func
    if _is_name(func, "zip") and any(is_it(arg) for arg in node.args):
        beside = [a.attr for a in node.args if isinstance(a, ast.Attribute) and _is_name(a.value, "self")]
        use.layers = use.layers or next(iter(beside), None)
    if not isinstance(func, ast.Attribute):
        return
    if func.attr in _MASK_CALLS and node.args and _contains(node.args[0], is_it):
        use.dtype = use.dtype or torch.bool
    if isinstance(func.value, ast.Name) and func.value.id == "self" and node.args and is_it(node.args[0]):
        use.layer = use.layer or func.attr
    if func.attr in _REPEATS and use.rank is None:
        # `q.unsqueeze(0).repeat(B, 1, 1)`: the sizes given, less the dims the chain added
        added, inner = 0, func.value
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "unsqueeze":
            added, inner = added + 1, inner.func.value
        sizes = node.args[0].elts if len(node.args) == 1 and isinstance(node.args[0], ast.Tuple) else node.args
        if is_it(inner) and sizes and not any(isinstance(s, ast.Starred) for s in sizes) and len(sizes) > added:
            use.rank = len(sizes) - added


def _optional_annotation(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return "Optional" in text or "None" in text


# tensor types an annotation names, and the dtype they hold (`input_ids: torch.LongTensor`)
_TYPED_TENSORS = {"LongTensor": torch.long, "IntTensor": torch.int32, "BoolTensor": torch.bool}


def _annotated_dtype(annotation: ast.expr | None) -> torch.dtype | None:
    if annotation is None:
        return None
    text = ast.unparse(annotation)
    return next((dtype for name, dtype in _TYPED_TENSORS.items() if name in text), None)


_INTS = re.compile(r"^(?:typing\.)?(?:Optional\[)?(?:(?:typing\.)?[Tt]uple\[((?:int,)*int)\]|(int))\]?$")


def _annotated_ints(annotation: ast.expr | None) -> int | None:
    """0 for `int`, n for `Tuple[int, ...n]` (a size `(h, w)`), else None."""
    found = _INTS.match(ast.unparse(annotation).replace(" ", "")) if annotation is not None else None
    if found is None:
        return None
    return 0 if found.group(2) else found.group(1).count(",") + 1

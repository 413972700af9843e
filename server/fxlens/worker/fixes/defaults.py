"""A mutable default argument of `forward` (`def forward(self, x, extra=[])`) → `None` and the value made in the
body (`if extra is None: extra = []`). symbolic_trace makes every argument a Proxy, the default one too, and
fails where the body iterates or indexes it; a `None` default is what fxlens freezes (concrete_args), so fx traces
the body for the default. One list shared by every call is also what Python warns about: a default the body adds
to is a cache kept between calls, and is declined (a fresh value each call would forget it).
"""

from __future__ import annotations

import ast

from fxlens.fix_report import TextEdit
from fxlens.worker.fixes.sites import Declined, Rewrite, Site, holds

TITLE = "Default to None"
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "popitem"}
)


def applies(site: Site) -> bool:
    return site.diagnostic.level == "fx"


def _mutable(node: ast.expr) -> bool:
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "dict", "set")


def _defaults(function: ast.FunctionDef) -> dict[str, ast.expr]:
    """The parameters with a mutable default, by name."""
    positional = [*function.args.posonlyargs, *function.args.args]
    paired = zip(positional[len(positional) - len(function.args.defaults) :], function.args.defaults)
    keyword = ((a, d) for a, d in zip(function.args.kwonlyargs, function.args.kw_defaults) if d is not None)
    return {arg.arg: default for arg, default in (*paired, *keyword) if _mutable(default)}


def _changes(function: ast.FunctionDef, name: str) -> str:
    """How the body changes the value `name` holds ("" when it only reads it)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            if isinstance(node.func.value, ast.Name) and node.func.value.id == name:
                return f"`{name}.{node.func.attr}(...)`"
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets += [node.target] if isinstance(node, ast.AugAssign) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
                return f"`{ast.unparse(target)} = ...`"
            if isinstance(node, ast.AugAssign) and isinstance(target, ast.Name) and target.id == name:
                return f"`{name} {ast.unparse(node).split(' ', 2)[1]} ...`"
    return ""


def _reads(site: Site, function: ast.FunctionDef, names: dict[str, ast.expr]) -> str | None:
    """The parameter of `names` the finding's statement reads."""
    statement = site.statement_at()
    if statement is None:
        return None
    head = statement.iter if isinstance(statement, (ast.For, ast.AsyncFor)) else statement
    return next((n.id for n in ast.walk(head) if isinstance(n, ast.Name) and n.id in names), None)


def propose(site: Site) -> Rewrite | Declined | None:
    d = site.diagnostic
    function = next((f for f in site.functions() if isinstance(f, ast.FunctionDef) and holds(f, d.line, d.col)), None)
    if function is None:
        return None
    names = _defaults(function)
    name = _reads(site, function, names)
    if name is None:
        return None
    changed = _changes(function, name)
    if changed:
        return Declined(
            TITLE,
            f"forward changes its default `{name}` ({changed}): the one default value keeps that between calls, "
            "which a fresh value per call would not",
        )
    default = names[name]
    first = function.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    anchor = function.body[1] if docstring and len(function.body) > 1 else first
    indent = " " * anchor.col_offset
    made = f"if {name} is None:\n{indent}    {name} = {site.segment(default)}\n{indent}"
    return Rewrite(
        TITLE,
        f"`{name}` defaults to None and forward makes the value each call: the same value for a caller that omits "
        "it, and fx traces the body for the default instead of making the argument a Proxy.",
        [
            site.replace(default, "None"),
            TextEdit(anchor.lineno, anchor.col_offset, anchor.lineno, anchor.col_offset, made),
        ],
    )

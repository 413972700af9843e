"""The settings a repository's Python files declare, read (never run): `parser.add_argument('--d_model',
type=int, default=512)` in a training script, as {`d_model`: 512}, and the fields of a dataclass or
NamedTuple with their defaults (`width: int = 192`).

Research code builds its models from the `argparse.Namespace` its training script parses
(`Model(configs)`, `configs.d_model`); the defaults that script declares are what the repository runs
with. fxlens reads them from the syntax tree of each script of the repository that calls `add_argument`:
the destination (`dest=`, else the first long option, dashes as underscores), and the default when it is a
literal (converted by `type=` as argparse converts a string default; `store_true` is False). A default
that is an expression is left out: fxlens never evaluates a script. A settings class's fields are
read the same way: a literal default, or a `field(default=...)` / `default_factory` of a literal.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass

from fxlens.worker.construction.package_index import package_folder, repository_files

# the files of a repository looked at, and their size: scripts, not a whole environment
MAX_FILES = 400
MAX_FILE_BYTES = 1 << 20
_CONVERTED = {"int": int, "float": float, "str": str}
_FLAGS = {"store_true": False, "store_false": True}


@dataclass
class Script:
    """Settings one file declares: its path, each setting's default in declaration order, and the class
    declaring them ("" for a script's argparse arguments)."""

    path: str
    defaults: dict[str, object]
    declared_by: str = ""


def repository_folder(path: str, roots: list[str]) -> str:
    """Where a file's scripts live: the deepest workspace root holding it, else the folder above its top
    package (a repository's `run.py` beside its `models/` package)."""
    mine = os.path.abspath(path)
    holding = [os.path.abspath(r) for r in roots if mine.startswith(os.path.abspath(r) + os.sep)]
    if holding:
        return max(holding, key=len)
    top = package_folder(path)
    return os.path.dirname(top) if os.path.isfile(os.path.join(top, "__init__.py")) else top


def scripts(folder: str) -> tuple[list[Script], list[Script]]:
    """Under `folder`: every script declaring argparse arguments with literal defaults, and every
    dataclass or NamedTuple with fields of literal defaults."""
    arguments, classes = [], []
    for path in python_files(folder):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            if "add_argument" not in text and "dataclass" not in text and "NamedTuple" not in text:
                continue
            tree = ast.parse(text, filename=path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue  # a file that does not parse declares nothing
        defaults = declared(tree)
        if defaults:
            arguments.append(Script(path, defaults))
        classes += [Script(path, fields, name) for name, fields in settings_classes(tree)]
    return arguments, classes


def settings_classes(tree: ast.Module) -> list[tuple[str, dict[str, object]]]:
    """(name, {field: default}) of each dataclass and NamedTuple of `tree`, its literal defaults only."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or not _is_settings(node):
            continue
        fields: dict[str, object] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                value = _field_default(stmt.value)
                if value is not _NONE:
                    fields[stmt.target.id] = value
        if fields:
            found.append((node.name, fields))
    return found


def _is_settings(node: ast.ClassDef) -> bool:
    def name(expr: ast.expr) -> str:
        expr = expr.func if isinstance(expr, ast.Call) else expr
        return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""

    return any(name(d) == "dataclass" for d in node.decorator_list) or any(name(b) == "NamedTuple" for b in node.bases)


def _field_default(value: ast.expr) -> object:
    """A field's literal default: `= 192`, `field(default=192)`, `field(default_factory=lambda: [30, 60])`."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field":
        keywords = {k.arg: k.value for k in value.keywords if k.arg}
        if "default" in keywords:
            return _literal(keywords["default"])
        factory = keywords.get("default_factory")
        if isinstance(factory, ast.Lambda):
            return _literal(factory.body)
        if isinstance(factory, ast.Name) and factory.id in ("list", "dict", "tuple"):
            return {"list": [], "dict": {}, "tuple": ()}[factory.id]
        return _NONE
    return _literal(value)


def python_files(folder: str) -> Iterator[str]:
    return repository_files(folder, (".py",), MAX_FILES, MAX_FILE_BYTES)


def declared(tree: ast.Module) -> dict[str, object]:
    """{destination: default} of every `add_argument` call of `tree` with a literal default, then what
    `set_defaults(...)` overrides."""
    defaults: dict[str, object] = {}
    overrides: dict[str, object] = {}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):  # in the order the script declares them
        assert isinstance(node.func, ast.Attribute)
        if node.func.attr == "add_argument":
            found = _argument(node)
            if found is not None:
                defaults[found[0]] = found[1]
        elif node.func.attr == "set_defaults":
            for keyword in node.keywords:
                literal = _literal(keyword.value)
                if keyword.arg and literal is not _NONE:
                    overrides[keyword.arg] = literal
    return {k: overrides.get(k, v) for k, v in defaults.items()} | {
        k: v for k, v in overrides.items() if k not in defaults
    }


_NONE = object()


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NONE


def _argument(call: ast.Call) -> tuple[str, object] | None:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if "dest" in keywords:
        dest = _literal(keywords["dest"])
    else:
        long = [o for o in options if o.startswith("--")]
        dest = (long or options or [""])[0].lstrip("-").replace("-", "_")
    if not isinstance(dest, str) or not dest.isidentifier():
        return None
    action = _literal(keywords["action"]) if "action" in keywords else None
    if "default" not in keywords:
        return (dest, _FLAGS[action]) if isinstance(action, str) and action in _FLAGS else None
    default = _literal(keywords["default"])
    if default is _NONE:
        return None
    kind = keywords.get("type")
    convert = _CONVERTED.get(kind.id) if isinstance(kind, ast.Name) else None
    if isinstance(default, str) and convert is not None:
        try:
            default = convert(default)  # argparse runs a string default through `type`
        except ValueError:
            return None
    return dest, default

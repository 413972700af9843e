"""Set-up calls a repository makes between building a model and calling it, replayed on fxlens's build.

A decoder with caches asserts `Caches must be initialized first` until `model.setup_caches(max_batch_size,
max_seq_length)` runs, as the repository's generate script does; another initialises its weights with
`model.init_weights()` or switches to `model.eval()`. fxlens reads (never runs) the repository's
Python files for a statement that builds the class (`model = Decoder(...)`, `Decoder.from_name(...)`)
and the method calls on that name that follow it in the same block (statements of their own, before
anything else uses the model): methods the class itself defines, and `eval()`. Each is replayed on the
instance with its arguments as written when they are literals (or names the block assigned literals),
else with values guessed from the method's parameter names (a batch of 2, a small length), never
with what moves or loads the model (`to`, `cuda`, `load_state_dict`: nn.Module's own methods).
"""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from fxlens.report import Build
from fxlens.worker.construction import guess_arguments as guessing
from fxlens.worker.construction import name_kinds
from fxlens.worker.construction.script_defaults import python_files, repository_folder

BATCH = 2
# set-up calls replayed per build at most
MAX_CALLS = 4
# nn.Module's own methods that are set-up, not moves or loads
_MODULE_SETUP = {"eval"}
# the words of a method's name that say it sets the model up (`setup_caches`, `init_weights`, `tie_weights`)
_SET_UP_WORDS = {"setup", "set", "init", "initialize", "initialise", "reset", "cache", "caches", "prepare", "tie"}


@dataclass
class SetUp:
    """The set-up calls found for a class: each as (method, args, kwargs), and where they were found."""

    calls: list[tuple[str, tuple, dict]] = field(default_factory=list)
    where: str = ""  # "generate.py:31"
    guessed: list[str] = field(default_factory=list)  # the arguments guessed, not written


def set_up(
    instance: nn.Module, build: Build, path: str, roots: list[str], on_device: Callable[[Callable], Any]
) -> None:
    """Replay on `instance` the set-up calls the repository makes after building its class, and say so in
    `build` (its detail, and its directive, which makes them too). Only a class defining a set-up method
    is looked for (a repository is not read for every class). Raises what a call raises: the caller
    then builds the class again, without them."""
    cls = type(instance)
    if not any(_is_set_up(cls, name) for name in dir(cls) if name not in _MODULE_SETUP and not name.startswith("_")):
        return
    found = find(cls, repository_folder(path, roots))
    if found is None:
        return
    on_device(lambda: replay(instance, found))
    calls = ", ".join(_call_text(method, args, kwargs) for method, args, kwargs in found.calls)
    guessed = f" ({', '.join(found.guessed)} guessed)" if found.guessed else ""
    build.detail += f"; set up as {found.where} does: {calls}{guessed}"
    if build.directive:
        build.directive = spelled(build.directive, found)


def _call_text(method: str, args: tuple, kwargs: dict) -> str:
    return f"{method}({', '.join([*map(repr, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})"


def find(cls: type, folder: str) -> SetUp | None:
    """The set-up calls the first statement of the repository building `cls` is followed by, or None."""
    name = cls.__name__
    for path in python_files(folder):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            if f"{name}(" not in text and f"{name}." not in text:
                continue
            tree = ast.parse(text, filename=path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for body in _bodies(tree):
            found = _after_construction(body, cls, functions)
            if found is not None:
                found.where = f"{os.path.relpath(path, folder)}:{found.where}"
                return found
    return None


def _bodies(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every block of statements of the file: the module's, each function's, each `if`'s and `with`'s."""
    return [
        getattr(node, field_name)
        for node in ast.walk(tree)
        for field_name in ("body", "orelse")
        if isinstance(getattr(node, field_name, None), list)
        and getattr(node, field_name)
        and isinstance(getattr(node, field_name)[0], ast.stmt)
    ]


def _builds(value: ast.expr, name: str) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name):
        return func.id == name
    if isinstance(func, ast.Attribute):  # `models.Decoder(...)`, `Decoder.from_name(...)`
        return func.attr == name or (isinstance(func.value, ast.Name) and func.value.id == name)
    return False


def _after_construction(body: list[ast.stmt], cls: type, functions: dict[str, ast.FunctionDef]) -> SetUp | None:
    literals: dict[str, Any] = {}
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if _builds(stmt.value, cls.__name__):
                found = _calls_on(target, body[index + 1 :], cls, literals, functions)
                if found is not None:
                    found.where = str(stmt.lineno)
                return found
            try:
                literals[target] = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                literals.pop(target, None)
    return None


def _method_call(node: ast.AST, target: str) -> ast.Call | None:
    """`target.method(...)` as a statement of its own."""
    call = node.value if isinstance(node, ast.Expr) else None
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == target
    ):
        return call
    return None


def _handed_to(
    stmt: ast.stmt, target: str, functions: dict[str, ast.FunctionDef]
) -> tuple[ast.FunctionDef, str] | None:
    """(the function of the file `stmt` hands the model to, its parameter's name): `generate(model, ...)`."""
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in functions):
        return None
    function = functions[call.func.id]
    params = [*function.args.posonlyargs, *function.args.args]
    index = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == target), None)
    return (function, params[index].arg) if index is not None and index < len(params) else None


def _calls_on(
    target: str, rest: list[ast.stmt], cls: type, literals: dict[str, Any], functions: dict[str, ast.FunctionDef]
) -> SetUp | None:
    """The set-up calls on `target` in the statements after its construction, and in the function they
    hand it to (a `generate(model, prompt)` that calls `model.setup_caches(...)` before using it)."""
    set_up = SetUp()
    calls: list[ast.Call] = []
    for stmt in rest:
        call = _method_call(stmt, target)
        if call is None and not any(isinstance(n, ast.Name) and n.id == target for n in ast.walk(stmt)):
            continue  # a statement that does not touch the model (`t0 = time.perf_counter()`)
        if call is None:
            handed = _handed_to(stmt, target, functions)
            if handed is not None:
                function, param = handed
                used = [
                    n.lineno
                    for n in ast.walk(function)
                    if isinstance(n, ast.Call) and getattr(n.func, "id", "") == param
                ]
                found = [c for n in ast.walk(function) if (c := _method_call(n, param)) is not None]
                calls += sorted(
                    (c for c in found if c.lineno < min(used, default=c.lineno + 1)), key=lambda c: c.lineno
                )
            break  # the model is used, or the block does something else: set-up is over
        calls.append(call)
    for call in calls:
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if not _is_set_up(cls, method):
            continue
        values = _arguments(cls, method, call, literals, set_up.guessed)
        if values is None:
            return None
        set_up.calls.append((method, *values))
        if len(set_up.calls) == MAX_CALLS:
            break
    return set_up if set_up.calls else None


def _is_set_up(cls: type, method: str) -> bool:
    """`eval`, or a method of the class itself named for set-up (never `generate`: that runs the model)."""
    if method in _MODULE_SETUP:
        return True
    if not set(name_kinds.words(method)) & _SET_UP_WORDS:
        return False
    owner = next((k for k in cls.__mro__ if method in k.__dict__), None)
    return owner is not None and not owner.__module__.startswith("torch.") and callable(getattr(cls, method, None))


def _arguments(
    cls: type, method: str, call: ast.Call, literals: dict[str, Any], guessed: list[str]
) -> tuple[tuple, dict] | None:
    """The call's (args, kwargs): literals as written, names of literals, the rest guessed by the name
    of the parameter they fill; None when one has no value."""
    try:
        params = [p for p in inspect.signature(getattr(cls, method)).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return None
    args = []
    for index, node in enumerate(call.args):
        name = params[index].name if index < len(params) else ""
        value = _value(node, name, literals, guessed)
        if value is _MISSING:
            return None
        args.append(value)
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        value = _value(keyword.value, keyword.arg, literals, guessed)
        if value is _MISSING:
            return None
        kwargs[keyword.arg] = value
    return tuple(args), kwargs


_MISSING = object()


def _value(node: ast.expr, name: str, literals: dict[str, Any], guessed: list[str]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in literals:
        return literals[node.id]
    words = set(name_kinds.words(name))
    if "batch" in words:
        value: Any = BATCH
    else:
        options = (
            guessing.options_for(
                inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD),
                guessing.Use(),
                {},
                [],
                nested=guessing.MODULE_DEPTH,
            )
            if name.isidentifier()
            else []
        )
        if not options:
            return _MISSING
        value = options[0].value
    guessed.append(f"{name}={value!r}")
    return value


def replay(instance: nn.Module, set_up: SetUp) -> None:
    """Run the set-up calls on `instance` (on the device it was built on: the caller's)."""
    for method, args, kwargs in set_up.calls:
        getattr(instance, method)(*args, **kwargs)


def spelled(constructor: str, set_up: SetUp) -> str:
    """The constructor expression with the set-up calls made on what it builds, still one call (so that
    a directive can append the inputs): `(lambda m: (m.setup_caches(2, 16), m)[-1])(Decoder(...))`."""
    calls = ", ".join(f"m.{_call_text(method, args, kwargs)}" for method, args, kwargs in set_up.calls)
    return f"(lambda m: ({calls}, m)[-1])({constructor})"

"""Example inputs the file's own code hands to the class, read (never run).

Research code shows its model's input: a `test()` function or the `__main__` block does
`net = ResNet18(); y = net(torch.randn(2, 3, 32, 32))`, a docstring has `>>> model(torch.randn(1, 3, 64, 64))`.
The tensor factories there (`torch.randn`, `rand`, `zeros`, `ones`, `empty`, `randint`) with literal sizes are
the first guess for each positional input of forward; a batch of 1 is read as the free batch. The file's own
code comes first, then the test files beside it (`test_models.py`, `tests/test_*.py`) that name the class.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from fxlens.worker.construction.build import BATCH
from fxlens.worker.construction.guess_inputs import Guess

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "randint", "full"}
_LARGEST_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class _Seen:
    """A tensor the code makes: its sizes, dtype, the ids' bound (randint), and the text that makes it."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    high: int
    text: str
    line: int


def inputs_in_code(cls: type) -> list[Guess | None] | None:
    """Per positional input, the tensor the file's code (then a test file beside it) first hands to an instance
    of `cls` (None for an input that is no factory of literal sizes); None when no call of an instance is found."""
    tree = _tree(cls)
    if tree is None:
        return None
    for scope, where in _scopes(tree, cls):
        found = _call_in(scope, cls.__name__)
        if found is not None:
            return [_guess(seen, where) if seen is not None else None for seen in found]
    for path, other in _test_files(cls):
        for node in ast.walk(other):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                found = _call_in(node.body, cls.__name__)
                if found is not None:
                    return [_guess(seen, f"`{path.name}`") if seen is not None else None for seen in found]
    return None


_MOST_TEST_FILES = 40


def _test_files(cls: type) -> list[tuple[Path, ast.Module]]:
    """The test files beside the class's file, in its parent folder and their `tests/` folders that name the
    class: where a repository shows its model's input."""
    module = sys.modules.get(cls.__module__)
    path = Path(getattr(module, "__file__", None) or "")
    if not path.name:
        return []
    folders = [path.parent, path.parent.parent]
    candidates = [
        file
        for folder in folders
        for pattern in ("test*.py", "*_test.py", "tests/test*.py", "test/test*.py")
        for file in sorted(folder.glob(pattern))
        if file != path
    ][:_MOST_TEST_FILES]
    found = []
    for file in dict.fromkeys(candidates):
        try:
            text = file.read_text(encoding="utf-8")
            if cls.__name__ in text:
                found.append((file, ast.parse(text)))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
    return found


def _tree(cls: type) -> ast.Module | None:
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    lines = linecache.getlines(path) if path else []  # the editor's buffer, as the loader seeded it
    try:
        return ast.parse("".join(lines)) if lines else None
    except SyntaxError:
        return None


def _scopes(tree: ast.Module, cls: type) -> list[tuple[list[ast.stmt], str]]:
    """Statement lists where a call may be, and how a label names them: the docstrings' examples of the class
    and its forward, every function of the file, every `if` block (`__main__`'s) and the top level."""
    scopes: list[tuple[list[ast.stmt], str]] = []
    for doc in (inspect.getdoc(cls), inspect.getdoc(getattr(cls, "forward", None))):
        example = _doctest(doc or "")
        if example:
            scopes.append((example, "its docstring"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If)):
            scopes.append((node.body, "the file's code"))
    scopes.append((tree.body, "the file's code"))
    return scopes


def _doctest(doc: str) -> list[ast.stmt]:
    code = [line.strip()[4:] for line in doc.splitlines() if line.strip().startswith((">>> ", "... "))]
    try:
        return ast.parse("\n".join(code)).body if code else []
    except SyntaxError:
        return []


def _call_in(body: list[ast.stmt], name: str) -> list[_Seen | None] | None:
    """The arguments of the first call of an instance of `name` in `body`, in statement order."""
    instances: set[str] = set()
    tensors: dict[str, _Seen] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _calls_instance(node.func, name, instances):
                return [_tensor(arg, tensors) for arg in node.args if not isinstance(arg, ast.Starred)]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if _builds(stmt.value, name):
                instances.add(target)
            seen = _tensor(stmt.value, tensors)
            if seen is not None:
                tensors[target] = seen
    return None


def _builds(node: ast.expr, name: str) -> bool:
    """`Name(...)`, also followed by `.to(...)`, `.eval()`, `.cuda()`."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return isinstance(node, ast.Call) and _name_of(node.func) == name


def _calls_instance(func: ast.expr, name: str, instances: set[str]) -> bool:
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return (isinstance(func, ast.Name) and func.id in instances) or _builds(func, name)


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _tensor(node: ast.expr, tensors: dict[str, _Seen]) -> _Seen | None:
    if isinstance(node, ast.Name):
        return tensors.get(node.id)
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
        node = node.func.value  # `torch.randn(...).to(device)`
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FACTORIES):
        return None
    if _name_of(node.func.value) != "torch":
        return None
    args = list(node.args)
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    high = 1
    if node.func.attr == "randint":  # randint(high, size) or randint(low, high, size)
        bounds = [_int(a) for a in args[:-1]]
        if not bounds or any(b is None for b in bounds):
            return None
        high, args = bounds[-1] or 1, args[-1:]
    elif node.func.attr == "full":
        args = args[:1]
    shape = _shape(args, keywords.get("size"))
    if shape is None or not shape or _count(shape) > _LARGEST_ELEMENTS:
        return None
    dtype = _dtype(keywords.get("dtype"), torch.long if node.func.attr == "randint" else torch.float32)
    return _Seen(shape, dtype, high, ast.unparse(node), node.lineno)


def _int(node: ast.expr) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _shape(args: list[ast.expr], size: ast.expr | None) -> tuple[int, ...] | None:
    if size is not None:
        args = [size]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = list(args[0].elts)
    sizes = [_int(a) for a in args]
    return tuple(s for s in sizes if s is not None) if all(s is not None and s > 0 for s in sizes) else None


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _dtype(node: ast.expr | None, default: torch.dtype) -> torch.dtype:
    name = _name_of(node) if node is not None else None
    found = getattr(torch, name, None) if name else None
    return found if isinstance(found, torch.dtype) else default


def _guess(seen: _Seen, where: str) -> Guess:
    """The tensor as a guess: a batch of 1 becomes the free batch (a size of 1 is specialised by export)."""
    shape, dims = seen.shape, {}
    if len(shape) >= 2 and shape[0] in (1, BATCH):
        shape, dims = (BATCH, *shape[1:]), {0: "B"}
    fill = "ids" if not seen.dtype.is_floating_point and seen.dtype != torch.bool else "normal"
    line = f" (line {seen.line})" if where != "its docstring" else ""  # a docstring's lines are its own
    return Guess(shape, seen.dtype, dims, fill, seen.high, why=f"as {where} calls it: `{seen.text}`{line}")

"""What one class's trace depends on, as a hash: a class whose fingerprint is the one its last trace
had keeps that trace. An edit to a parent's `forward` then re-traces the parent only, not every child
it builds, once the child's instance and inputs are seen to be the same as before.

The hash covers what the worker can see changing between two traces of a buffer:
- the code: the class's own lines and those of every top-level definition it reaches by name from
  its code and its submodules' classes (functions, classes, globals, transitively), plus the
  top-level statements that act on everything (imports, `torch.fx.wrap`, patches); and what those
  globals hold once every class is built, when it is plain data;
- the instance: every submodule's class, attributes, parameters, buffers and hooks;
- the inputs (shapes, dtypes, named free sizes; values of CPU tensors) and how the class was built;
- the Python and torch versions.
Not the levels asked for: a class's fingerprint names its traces at every level alike, so a level
computed later (on demand) is kept with the others while the fingerprint stands.
Files that define the class's submodules or what its code imports count by their size and mtime, or
by their text when it came from an open editor buffer that differs from the disk.
Anything that cannot be described (a repr that raises, a huge value) gives no fingerprint, and a
class without one is always traced.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from fxlens import lines as line_model
from fxlens.outline import Outline
from fxlens.report import Build
from fxlens.worker.load import imports
from fxlens.worker.load.loader import is_main_guard

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DESCRIPTION = 4 << 20  # characters: a model whose state is this large is simply traced
_MAX_TENSOR_BYTES = 1 << 16  # a CPU tensor's values count only when small (an index list, a mask)
_MAX_GLOBAL_ITEMS = 1000  # a global table larger than this counts by its source text only
_MAX_MODULES_WALKED = 2000  # past this many imported modules, every open buffer counts
# nn.Module's own bookkeeping, described separately (parameters, buffers, hooks) or not at all
_MODULE_INTERNALS = frozenset(vars(nn.Module())) - {"training"}


class Unfingerprintable(Exception):
    """A value that cannot be described but by its address: no fingerprint, the class is traced."""


@dataclass
class CodeIndex:
    """The file's top level as a class's trace can depend on it."""

    # name -> the text of the top-level statements defining it (a class: its chunk, directive included)
    definitions: dict[str, str] = field(default_factory=dict)
    # statements that act on everything (imports, `torch.fx.wrap`, patches, `if`/`try` blocks)
    effects: list[str] = field(default_factory=list)


def _segments(text: str) -> Callable[[ast.AST], str | None]:
    """`ast.get_source_segment(text, node)`, with the text split into lines once: ast splits it again on
    every call, which made a 9,000-line file's index take 7 s."""
    lines = line_model.keeping_ends(text)

    def segment(node: ast.AST) -> str | None:
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if start is None or end is None or col is None or end_col is None or end > len(lines):
            return None
        if start == end:
            return lines[start - 1].encode()[col:end_col].decode()
        return "".join(
            [
                lines[start - 1].encode()[col:].decode(),
                *lines[start : end - 1],
                lines[end - 1].encode()[:end_col].decode(),
            ]
        )

    return segment


def _assigned_names(stmt: ast.stmt) -> list[str] | None:
    """The names an assignment to plain names binds (`x = `, `x: int = `, `x += `); None for any other statement."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = [target.id for target in targets if isinstance(target, ast.Name)]
    return names if len(names) == len(targets) else None


def index_code(tree: ast.Module, text: str, code: Outline) -> CodeIndex:
    index = CodeIndex()
    segment = _segments(text)

    def define(name: str, source: str) -> None:
        index.definitions[name] = index.definitions.get(name, "") + source + "\n"

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            source = segment(stmt) or ast.dump(stmt)
            if isinstance(stmt, ast.ClassDef):
                define(stmt.name, code.classes.get(stmt.name, source))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = [segment(d) or "" for d in stmt.decorator_list]
                define(stmt.name, "\n".join([*decorators, source]))
            elif (names := _assigned_names(stmt)) is not None:
                for name in names:
                    define(name, source)
            elif is_main_guard(stmt):
                continue  # never run by a trace (a build from its calls shows in the build detail)
            else:
                index.effects.append(source)
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(stmt, block, None) or [])
                for handler in getattr(stmt, "handlers", None) or []:
                    visit(handler.body)

    visit(tree.body)
    return index


def _code_used(name: str, instance: nn.Module, index: CodeIndex) -> tuple[list[list[str]], set[str]]:
    """The definitions reachable from the class and its submodules' classes, by the names they use;
    and the names they use that the file does not define (imported: their files count)."""
    todo = [name, *(type(m).__name__ for m in instance.modules())]
    found: set[str] = set()
    foreign: set[str] = set()
    while todo:
        current = todo.pop()
        if current in found or current in foreign:
            continue
        if current not in index.definitions:
            foreign.add(current)
            continue
        found.add(current)
        todo.extend(_WORD.findall(index.definitions[current]))
    return [[n, index.definitions[n]] for n in sorted(found)], foreign


def _describe(value: Any, depth: int = 0) -> Any:
    """Plain, address-free data for a value a forward may read."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    if isinstance(value, torch.Tensor):
        entry = [str(value.dtype), list(value.shape), list(value.stride()), str(value.device), value.requires_grad]
        if value.device.type == "cpu" and not value.is_sparse:
            if value.numel() * value.element_size() > _MAX_TENSOR_BYTES:
                raise Unfingerprintable("a large CPU tensor")
            entry.append(
                value.detach().contiguous().numpy().tobytes().hex()
                if value.dtype != torch.bfloat16
                else repr(value.tolist())
            )
        return entry
    if isinstance(value, (torch.dtype, torch.device, torch.Size)):
        return str(value)
    if depth > 4:
        raise Unfingerprintable("a deeply nested value")
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_describe(v, depth + 1) for v in value]
        return [type(value).__name__, sorted(map(repr, items)) if isinstance(value, (set, frozenset)) else items]
    if isinstance(value, dict):
        return ["dict", [[repr(k), _describe(v, depth + 1)] for k, v in value.items()]]
    if isinstance(value, types.FunctionType):
        # a lambda made in __init__ carries what it closed over: `lambda x: x * scale`
        cells = [_describe(cell.cell_contents, depth + 1) for cell in value.__closure__ or ()]
        return ["function", value.__module__, value.__qualname__, cells, _describe(value.__defaults__, depth + 1)]
    if isinstance(value, (type, types.BuiltinFunctionType)) or (callable(value) and hasattr(value, "__self__")):
        bound = getattr(value, "__self__", None)
        owner = type(bound).__qualname__ if bound is not None and not isinstance(bound, types.ModuleType) else ""
        return ["callable", getattr(value, "__module__", ""), getattr(value, "__qualname__", repr(value)), owner]
    text = repr(value)
    if " at 0x" not in text:
        return [type(value).__qualname__, text]
    if type(value).__repr__ is not object.__repr__ or not hasattr(value, "__dict__"):
        raise Unfingerprintable(f"a {type(value).__qualname__} described only by its address")
    # a plain object (a config class without a repr): what it holds
    return [type(value).__qualname__, {k: _describe(v, depth + 1) for k, v in sorted(vars(value).items())}]


def _global_values(names: list[str], namespace: dict) -> list:
    """The values the file's globals among `names` hold now, after every class was built: a parent's
    `__init__` may fill a registry a child's `forward` reads. Only plain data counts; what cannot be
    described (a logger, a huge table) is left to its source text."""
    values = []
    for name in names:
        value = namespace.get(name)
        if isinstance(value, (type, types.FunctionType, types.ModuleType)) or value is None:
            continue
        if isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) > _MAX_GLOBAL_ITEMS:
            continue
        try:
            values.append([name, _describe(value)])
        except Unfingerprintable:
            continue
    return values


def _hooks(hooks: dict) -> list:
    return [_describe(hook) for hook in hooks.values()]


def _module_state(path: str, module: nn.Module) -> list:
    cls = type(module)
    return [
        path,
        cls.__module__,
        cls.__qualname__,
        {k: _describe(v) for k, v in sorted(vars(module).items()) if k not in _MODULE_INTERNALS},
        [[k, _describe(v)] for k, v in module._parameters.items()],
        [[k, _describe(v), k in module._non_persistent_buffers_set] for k, v in module._buffers.items()],
        _hooks(module._forward_pre_hooks),
        _hooks(module._forward_hooks),
    ]


def _source_file(obj: Any) -> str | None:
    if isinstance(obj, types.ModuleType):
        return getattr(obj, "__file__", None)
    try:
        return inspect.getsourcefile(obj if isinstance(obj, (type, types.FunctionType)) else type(obj))
    except TypeError:  # built in
        return None


def _other_files(objects: list, path: str) -> list:
    """The files (not this buffer, not torch) that define `objects`, each as `_file_state` says: an
    edit to an imported file, saved or in an open buffer, changes the fingerprint of every class that
    uses what it defines. Open buffers count through imports of imports too (model -> parts -> utils)."""
    torch_root = os.path.dirname(torch.__file__)
    files = set()
    for obj in objects:
        source = _source_file(obj)
        if source and os.path.abspath(source) != path and not source.startswith(torch_root):
            files.add(os.path.abspath(source))
    files |= _buffers_reached(files, path, torch_root)
    return [_file_state(file) for file in sorted(files)]


def _buffers_reached(files: set[str], path: str, torch_root: str) -> set[str]:
    """The files served from buffers that the modules of `files` reach through their globals (the
    modules, functions and classes they import), transitively; every served one if the walk is too long."""
    served = {f for f in imports.served() if f != path}
    if not served - files:
        return set()
    by_file = {
        os.path.abspath(module_file): m
        for m in list(sys.modules.values())
        if isinstance(module_file := getattr(m, "__file__", None), str)
    }
    todo = [(f, by_file[f]) for f in files if f in by_file]  # (its file, a module)
    seen: set[int] = set()
    reached: set[str] = set()
    while todo:
        file, module = todo.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        if len(seen) > _MAX_MODULES_WALKED:
            return served
        if file in served:
            reached.add(file)
        for value in list(vars(module).values()):
            if not isinstance(value, types.ModuleType):
                value = (
                    sys.modules.get(getattr(value, "__module__", None) or "")
                    if isinstance(value, (type, types.FunctionType))
                    else None
                )
            value_file = getattr(value, "__file__", None)
            if (
                value is not None
                and id(value) not in seen
                and isinstance(value_file, str)
                and not value_file.startswith(torch_root)
            ):
                todo.append((os.path.abspath(value_file), value))
    return reached


def _file_state(file: str) -> list:
    """Size and mtime of the file on disk; the hash of its text when it was imported from an editor
    buffer that differs from the disk (an unsaved edit: opening a file must not look like a change)."""
    try:
        stat = os.stat(file)
    except OSError:
        stat = None
    text = imports.served_text(file)
    if text is not None and not _same_as_disk(file, text, stat):
        return [file, "buffer", imports.text_digest(text)]
    return [file, stat.st_size, stat.st_mtime_ns] if stat is not None else [file, None]


def _same_as_disk(file: str, text: str, stat: os.stat_result | None) -> bool:
    encoded = text.encode("utf-8", errors="surrogatepass")
    if stat is None or stat.st_size != len(encoded):
        return False
    try:
        with open(file, "rb") as handle:
            return handle.read() == encoded
    except OSError:
        return False


@dataclass
class Subject:
    """A built class, as its fingerprint sees it besides its code."""

    name: str
    instance: nn.Module
    inputs: tuple | None  # (args, kwargs) of its example call, None without one
    dims: list | None  # the example inputs' free dimensions
    build: Build
    built_by: str | None  # the parent class whose run built it, if any


def fingerprint(subject: Subject, code: CodeIndex, namespace: dict, path: str) -> str | None:
    """`namespace`: the file's module globals, where the names its code imports point."""
    name, instance, inputs, dims = subject.name, subject.instance, subject.inputs, subject.dims
    build, built_by = subject.build, subject.built_by
    try:
        definitions, foreign = _code_used(name, instance, code)
        imported = [namespace[n] for n in sorted(foreign) if n in namespace]
        description = json.dumps(
            [
                name,
                sys.version,
                torch.__version__,
                code.effects,
                definitions,
                _global_values([n for n, _ in definitions], namespace),
                [_module_state(p, m) for p, m in instance.named_modules()],
                _describe(inputs) if inputs is not None else None,
                dims
                and [sorted(d.items()) if isinstance(d, dict) else d and [sorted(i.items()) for i in d] for d in dims],
                [build.how, build.inputs_source, build.detail, build.device, build.tensors, built_by],
                _other_files([type(m) for m in instance.modules()] + imported, path),
            ]
        )
    except Exception:  # noqa: BLE001  user reprs can raise anything: no fingerprint, the class is traced
        return None
    if len(description) > _MAX_DESCRIPTION:
        return None
    return hashlib.sha256(description.encode()).hexdigest()[:32]

"""What one class's trace depends on, as a hash: a class whose fingerprint is the one its last trace
had keeps that trace. An edit to a parent's `forward` then re-traces the parent only, not every child
it builds, once the child's instance and inputs are seen to be the same as before.

The hash covers what the worker can see changing between two traces of a buffer:
- the code: the class's own lines, the lines of the classes it uses (its submodules' classes and any
  class its code or the module-level code names, transitively) and every line outside the classes;
- the instance: every submodule's class, attributes, parameters, buffers and hooks;
- the inputs (shapes, dtypes, named free sizes; values of CPU tensors) and how the class was built;
- the levels asked for, and the Python and torch versions.
Files the class's modules are defined in (other than this buffer) count by their size and mtime.
Anything that cannot be described (a repr that raises, a huge value) gives no fingerprint, and a
class without one is always traced.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import sys
import types
from typing import Any, Optional

import torch
from torch import nn

from fxlens.outline import Outline
from fxlens.report import Build

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DESCRIPTION = 4 << 20  # characters: a model whose state is this large is simply traced
_MAX_TENSOR_BYTES = 1 << 16  # a CPU tensor's values count only when small (an index list, a mask)
# nn.Module's own bookkeeping, described separately (parameters, buffers, hooks) or not at all
_MODULE_INTERNALS = frozenset(vars(nn.Module())) - {"training"}


class Unfingerprintable(Exception):
    pass


def _classes_used(name: str, instance: nn.Module, code: Outline) -> list[str]:
    chunks, rest = code.classes, code.rest
    used = {type(m).__name__ for m in instance.modules()} | {name}
    used |= set(_WORD.findall(rest))
    todo = [n for n in used if n in chunks]
    found: set[str] = set()
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        todo.extend(w for w in set(_WORD.findall(chunks[current])) if w in chunks and w not in found)
    return sorted(found)


def _describe(value: Any, depth: int = 0) -> Any:
    """Plain, address-free data for a value a forward may read."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    if isinstance(value, torch.Tensor):
        entry = [str(value.dtype), list(value.shape), list(value.stride()), str(value.device), value.requires_grad]
        if value.device.type == "cpu" and not value.is_sparse:
            if value.numel() * value.element_size() > _MAX_TENSOR_BYTES:
                raise Unfingerprintable("a large CPU tensor")
            entry.append(value.detach().contiguous().numpy().tobytes().hex() if value.dtype != torch.bfloat16
                         else repr(value.tolist()))
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


def _hooks(hooks: dict) -> list:
    return [_describe(hook) for hook in hooks.values()]


def _module_state(path: str, module: nn.Module) -> list:
    cls = type(module)
    return [path, cls.__module__, cls.__qualname__,
            {k: _describe(v) for k, v in sorted(vars(module).items()) if k not in _MODULE_INTERNALS},
            [[k, _describe(v)] for k, v in module._parameters.items()],
            [[k, _describe(v), k in module._non_persistent_buffers_set] for k, v in module._buffers.items()],
            _hooks(module._forward_pre_hooks), _hooks(module._forward_hooks)]


def _other_files(instance: nn.Module, path: str) -> list:
    """Size and mtime of the files (not this buffer, not torch) that define the instance's classes."""
    torch_root = os.path.dirname(torch.__file__)
    files = set()
    for module in instance.modules():
        try:
            source = inspect.getsourcefile(type(module))
        except TypeError:
            continue
        if source and os.path.abspath(source) != path and not source.startswith(torch_root):
            files.add(os.path.abspath(source))
    described = []
    for file in sorted(files):
        try:
            stat = os.stat(file)
            described.append([file, stat.st_size, stat.st_mtime_ns])
        except OSError:
            described.append([file, None])
    return described


def fingerprint(name: str, instance: nn.Module, inputs: Optional[tuple], dims: Optional[list], build: Build,
                built_by: Optional[str], code: Outline, path: str, levels: list[str]) -> Optional[str]:
    try:
        description = json.dumps([
            name, levels, sys.version, torch.__version__, code.rest,
            [[c, code.classes[c]] for c in _classes_used(name, instance, code)],
            [_module_state(p, m) for p, m in instance.named_modules()],
            _describe(inputs) if inputs is not None else None, dims and [sorted(d.items()) if d else None for d in dims],
            [build.how, build.inputs_source, build.detail, build.device, built_by],
            _other_files(instance, path),
        ])
    except Exception:  # noqa: BLE001  user reprs can raise anything: no fingerprint, the class is traced
        return None
    if len(description) > _MAX_DESCRIPTION:
        return None
    return hashlib.sha256(description.encode()).hexdigest()[:32]

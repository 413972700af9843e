"""The dynamo level's guards: what each frame torch.compile compiled for the call assumed, read from the
guard manager torch built for it (the tree `torch.compile` evaluates before it reuses the frame), while
dynamo's caches still hold it.

Each leaf of the tree is one guard, kept in torch's words (its class and code). The line that made dynamo add
it comes from the guards dynamo exported for the same compile (`guard_export_fn`): their `user_stack` is the
inlined call stack, whose innermost frame of the user's file is the line (a parameter's TENSOR_MATCH is made
in `nn.Linear.forward`; the user's `self.fc(x)` is the line that asked for it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import torch

from fxlens.guard_report import CompiledFrame, Guard
from fxlens.report import Span
from fxlens.worker.failures.limits import bounded

# a level's guards kept in the report; the rest are counted (a model with thousands of parameters has
# thousands of tensor guards, each a line of torch's code)
MAX_GUARDS = 3000
_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<name>\w+?)_at_(?P<line>\d+)$")
_TENSOR = re.compile(
    r"check_tensor\(.*, DispatchKeySet\((?P<keys>[^)]*)\), (?P<dtype>torch\.\w+), device=(?P<device>[^,]+), "
    r"requires_grad=(?P<grad>True|False), size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]\)"
)
_COMPARED = re.compile(r"^(?P<subject>.+?) (?:==|is) (?P<value>.+)$")
_SOURCE_IN_CODE = re.compile(r"[LG]\['[^']*'\](?:\.\w+|\['[^']*'\]|\(\)|\[\d+\])*")
_VALUE_KINDS = frozenset({"EQUALS_MATCH", "TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH", "NOT_NONE_MATCH"})


class Exported:
    """The guards dynamo exports for each compile (`guard_export_fn`), by compile id: what gives lines."""

    def __init__(self) -> None:
        self.by_compile: dict[str, list[Any]] = {}

    def __call__(self, guards: Any) -> None:
        from torch._guards import CompileContext

        self.by_compile.setdefault(str(CompileContext.current_compile_id()), []).extend(guards)


def compiled_frames(path: str, lines: list[str], exported: Exported) -> list[CompiledFrame]:
    """Every frame dynamo holds a compiled entry for, oldest compile first, with its guards. Called before
    dynamo's caches are reset (explain's run resets them when it ends)."""
    from torch._dynamo import convert_frame
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    entries = []
    for ref in list(convert_frame.input_codes.seen):
        code = ref()
        if code is not None:
            entries += [(code, entry) for entry in _debug_get_cache_entry_list(code)]
    entries.sort(key=lambda pair: _compile_order(pair[1].compile_id))
    frames = []
    budget = MAX_GUARDS
    for code, entry in entries:
        frame = _frame(code, entry, path)
        near = _lines_by_source(exported.by_compile.get(frame.compile_id, []), path, lines)
        parameters = frozenset(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
        for source, kind, part in _leaves(entry.guard_manager):
            if budget <= 0:
                frame.cut += 1
                continue
            budget -= 1
            frame.guards.append(
                _guard(source, kind, part, near, parameters if frame.resumed_at is None else frozenset())
            )
        frames.append(frame)
    return frames


def _compile_order(compile_id: Any) -> tuple[int, int]:
    return (compile_id.frame_id or 0, compile_id.frame_compile_id or 0)


def _frame(code: Any, entry: Any, path: str) -> CompiledFrame:
    qualname = getattr(code, "co_qualname", code.co_name)
    resumed = _RESUME.search(qualname)
    function = qualname[: resumed.start()] + resumed.group("name") if resumed else qualname
    mine = os.path.abspath(code.co_filename) == path
    return CompiledFrame(
        function,
        str(entry.compile_id),
        code.co_firstlineno if mine and not resumed else None,
        int(resumed.group("line")) if resumed else None,
    )


def _leaves(wrapper: Any) -> Iterator[tuple[str, str, str]]:
    """(source, kind, code part) of every check of the tree, as torch's log prints them: a line per part
    of each leaf (the leaf that checks a tensor's marks of dynamic sizes has five), each leaf once (a
    relational guard, two tensors that must not alias, hangs under every source it relates); the shape
    guards run last (the epilogue)."""
    from torch._C._dynamo.guards import DictGuardManager, RelationalGuard

    seen: set[int] = set()

    def walk(manager: Any) -> Iterator[tuple[str, str, str]]:
        for leaf in manager.get_leaf_guards():
            if isinstance(leaf, RelationalGuard):
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            # the root's own leaves read no source (the root's is the frame's locals: "L")
            source = "" if manager is root else manager.get_source()
            for part in leaf.verbose_code_parts():
                yield source, type(leaf).__name__, part
        if isinstance(manager, DictGuardManager):
            for _, (key, value) in sorted(manager.get_key_value_managers().items()):
                for part in (key, value):
                    if part is not None:
                        yield from walk(part)
        for child in manager.get_child_managers():
            yield from walk(child)

    root = wrapper.root
    yield from walk(root)
    for leaf in root.get_epilogue_lambda_guards():
        for part in leaf.verbose_code_parts():
            yield "", type(leaf).__name__, part


def _lines_by_source(guards: list[Any], path: str, lines: list[str]) -> dict[str, Span]:
    """Each guarded source's line: the innermost frame of the user's file in the stack that first guarded it."""
    found: dict[str, Span] = {}
    for guard in guards:
        stack = [f for f in (guard.user_stack or []) if os.path.abspath(f.filename) == path]
        if not stack or guard.name in found:
            continue
        frame = stack[-1]
        text = lines[frame.lineno - 1] if 0 < frame.lineno <= len(lines) else ""
        if getattr(frame, "colno", None) is not None and getattr(frame, "end_colno", None) is not None:
            found[guard.name] = Span(frame.lineno, frame.colno, frame.end_lineno or frame.lineno, frame.end_colno)
        else:
            indent = len(text) - len(text.lstrip())
            found[guard.name] = Span(frame.lineno, indent, frame.lineno, len(text.rstrip()))
    return found


def _code(part: str) -> str:
    """A verbose code part without the comment torch appends (the user's line, where it was added)."""
    return part.split("  #")[0].rstrip()


def subject_of(source: str) -> str:
    """torch's source in the user's words: `L['self']._modules['fc']._parameters['weight']` -> `self.fc.weight`."""
    text = re.sub(r"\._(?:modules|parameters|buffers)\['([^']*)'\]", r".\1", source)
    text = re.sub(r"\.__dict__$", "", text)
    text = re.sub(r"^[LG]\['__import_([\w]+)'\]", lambda m: m.group(1).replace("_dot_", "."), text)
    return re.sub(r"^[LG]\['([^']*)'\]", r"\1", text)


def _role(source: str, parameters: frozenset[str]) -> str:
    if source.startswith("L['self']"):
        return "attribute"
    if source.startswith("L["):
        name = source[3 : source.index("'", 3)] if source.startswith("L['") else ""
        return "input" if name in parameters else "local"
    return "global" if source.startswith("G[") else "state"


def _guard(source: str, kind: str, part: str, near: dict[str, Span], parameters: frozenset[str]) -> Guard:
    code = _code(part)
    if not source:  # a shape guard reads sizes of the sources it names: the first is its subject
        named = _SOURCE_IN_CODE.search(code) if kind == "LAMBDA_GUARD" else None
        source_for_line = named.group(0) if named else ""
    else:
        source_for_line = source
    guard = Guard(kind, source, bounded(code), subject_of(source_for_line), _role(source_for_line, parameters))
    span = near.get(source) or near.get(re.sub(r"\.__dict__$", "", source))
    if span is not None:
        span.copy_to(guard)
    _facts(guard, kind, code)
    return guard


def _facts(guard: Guard, kind: str, code: str) -> None:
    """What torch's text says the guard expects, where it says it in a fixed form."""
    if kind == "TENSOR_MATCH" and (tensor := _TENSOR.search(code)):
        guard.dtype = tensor.group("dtype").removeprefix("torch.")
        guard.shape = _sizes(tensor.group("size"))
        guard.stride = _sizes(tensor.group("stride"))
        guard.requires_grad = tensor.group("grad") == "True"
        keys = [k.strip() for k in tensor.group("keys").split(",") if k.strip()]
        backend = keys[0].lower() if keys else None
        index = tensor.group("device")
        guard.device = f"{backend}:{index}" if backend and index != "None" else backend
    elif kind in _VALUE_KINDS and (compared := _COMPARED.match(code)):
        guard.value = bounded(compared.group("value"))
    elif kind == "GLOBAL_STATE" and " against " in code:
        try:
            state = json.loads(code.split(" against ", 1)[1])
        except ValueError:
            state = None
        guard.state = state if isinstance(state, dict) else {}
        # torch records the default dtype as its C++ type number (6); the run that compiled it is this
        # process's, moments ago, whose default dtype is the one recorded: its name, for people
        guard.state["default_dtype_name"] = str(torch.get_default_dtype()).removeprefix("torch.")


def _sizes(text: str) -> list[int | None]:
    return [None if part.strip() == "None" else int(part) for part in text.split(",") if part.strip()]

"""The `aten` level: torch.export (non-strict, training IR), nodes mapped through their stack traces."""
from __future__ import annotations

import os
import re
import time
from typing import Any, Optional

import torch

from fxlens.report import LevelResult, Node, Span
from fxlens.worker.failures import classify, whole_line
from fxlens.worker.trace_fx import target_text
from fxlens.worker.values import SymbolNames, describe

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def export(module: torch.nn.Module, inputs: tuple, dynamic: Optional[tuple]) -> Any:
    return torch.export.export(module, inputs, dynamic_shapes=dynamic, strict=False)


def innermost_user_line(stack_trace: str, path: str) -> Optional[tuple[str, int]]:
    """(function, line) of the last frame of `path` in a node's stack trace (innermost is last)."""
    found = None
    for match in _FRAME.finditer(stack_trace or ""):
        if os.path.abspath(match.group("file")) == path:
            found = (match.group("func"), int(match.group("line")))
    return found


def _scope(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    # export writes "L['self'].h[0].attn" style paths in some versions: normalise to "h.0.attn"
    path = re.sub(r"^L\['self'\]\.?", "", path)
    return re.sub(r"\[(\d+)\]", r".\1", path).strip(".")


def nodes_of(ep: Any, path: str, lines: list[str], symbols: SymbolNames) -> list[Node]:
    result = []
    for n in ep.graph.nodes:
        shape, dtype, value = describe(n.meta.get("val"), symbols)
        entry = Node(name=n.name, op=n.op, target=target_text(n), num_users=len(n.users),
                     users=[u.name for u in n.users], text=n.format_node() or "", shape=shape, dtype=dtype,
                     value=value, scope=_scope(n))
        if isinstance(n.target, torch._ops.OpOverload):
            entry.overload = n.target._overloadname
        where = innermost_user_line(n.meta.get("stack_trace", ""), path) if n.op not in ("placeholder", "output") else None
        if where:
            function, line = where
            span = whole_line(line, lines)
            entry.function, entry.line, entry.col, entry.end_line, entry.end_col = (
                function, span.line, span.col, span.end_line, span.end_col)
        result.append(entry)
    return result


def _dynamic_shapes(inputs: tuple, dims: Optional[list]) -> Optional[tuple]:
    if not dims or not any(dims):
        return None
    auto = getattr(torch.export.Dim, "AUTO", None)
    specs = []
    for value, free in zip(inputs, dims):
        if isinstance(value, torch.Tensor) and free:
            specs.append({d: auto if auto is not None else torch.export.Dim(name, min=2) for d, name in free.items()})
        else:
            specs.append(None)
    return tuple(specs)


def _learn_symbols(ep: Any, dims: Optional[list]) -> SymbolNames:
    symbols = SymbolNames()
    user_inputs = list(ep.graph_signature.user_inputs)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for name, free in zip(user_inputs, dims or []):
        value = placeholders[name].meta.get("val") if name in placeholders else None
        if isinstance(value, torch.Tensor) and free:
            for d, dim_name in free.items():
                symbols.learn(value.shape[d], dim_name)
    return symbols


def run(example: Any, path: str, lines: list[str], class_span: Span) -> LevelResult:
    started = time.perf_counter()
    if example.inputs is None:
        return LevelResult("aten", False, note="no example inputs: torch.export needs them")
    dynamic = _dynamic_shapes(example.inputs, example.dims)
    note = ""
    try:
        ep = export(example.instance, example.inputs, dynamic)
    except Exception as dynamic_error:
        if dynamic is None:
            diagnostic = classify(dynamic_error, path, lines, "trace", "aten", class_span)
            return LevelResult("aten", False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)
        try:
            ep = export(example.instance, example.inputs, None)
        except Exception as error:
            diagnostic = classify(error, path, lines, "trace", "aten", class_span)
            return LevelResult("aten", False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)
        note = f"exported with static shapes (free sizes failed: {type(dynamic_error).__name__})"
        dynamic = None
    symbols = _learn_symbols(ep, example.dims if dynamic else None)
    nodes = nodes_of(ep, path, lines, symbols)
    return LevelResult("aten", True, nodes, [], ep.graph_module.code, time.perf_counter() - started, note)

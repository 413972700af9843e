"""The `aten` level: torch.export (non-strict, training IR), nodes mapped through their stack traces.

Free sizes (B, T) are named from two static exports, not one symbolic export: see _scaled_export."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from fxlens.report import LevelResult, Node, Span
from fxlens.worker.failures.classify import classify, message_text, user_frames, whole_line
from fxlens.worker.levels import devices, overloads, size_probe, specialise
from fxlens.worker.levels.forked import ForkedCall, Lost
from fxlens.worker.levels.fx import graph_node, target_text
from fxlens.worker.levels.values import SampledSizes, describe, free_sizes, plain_sizes, scale_up, twin_of

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


# what a caller keeps of an exported program: `describe(program, seconds_it_took)`, plain data or None
Describe = Callable[[Any, float], dict | None]


def export(module: torch.nn.Module, inputs: tuple, dynamic: tuple | None, kwargs: dict | None = None) -> Any:
    return torch.export.export(module, inputs, kwargs=kwargs or None, dynamic_shapes=dynamic, strict=False)


def export_example(module: torch.nn.Module, inputs: tuple, kwargs: dict, rebuild: Callable | None) -> Any:
    """Export on fake CPU tensors made from the meta ones, whatever the other levels needed: no memory, and
    the graph a CPU export gives (on meta, operators such as SDPA choose another output layout, and the
    graph gains a `contiguous` the user's export has not); `.item()` becomes an unbacked size. Code fake
    tensors cannot run (`.numpy()`, an operator with no fake kernel) exports on real CPU tensors when the
    module is small."""
    return devices.run(
        lambda m, call: export(m, call[0], None, call[1]),
        module,
        (inputs, kwargs),
        "fake",
        rebuild,
        options=devices.RunOptions(traces=True),
    )


def export_for(example: Any) -> Any:
    """The example exported (on the cheapest tensors that run it, noted on its Build): what the deeper
    levels build on when the aten level did not run in this trace."""
    ran = export_example(example.instance, example.inputs, example.kwargs, getattr(example, "rebuild", None))
    devices.note(example.build, ran)
    return ran.value


@contextmanager
def without_stack_traces() -> Iterator[None]:
    """For an export whose nodes are never mapped to source: ~10% faster without their stack traces."""
    config = torch.fx.config
    before = config.do_not_emit_stack_traces
    config.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        config.do_not_emit_stack_traces = before  # (needed where it ran here, not in a forked process)


def innermost_user_line(stack_trace: str, path: str) -> tuple[str, int] | None:
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


def nodes_of(ep: Any, path: str, lines: list[str], names: SampledSizes, twins: dict[str, Any]) -> list[Node]:
    result = []
    for n in ep.graph.nodes:
        entry = graph_node(n, describe(n.meta.get("val"), names, twins.get(n.name)))
        entry.scope = _scope(n)
        if isinstance(n.target, torch._ops.OpOverload):
            entry.overload = n.target._overloadname
        where = user_line_span(n, path, lines)
        if where:
            entry.function, span = where
            span.copy_to(entry)
        result.append(entry)
    return result


def user_line_span(n: Any, path: str, lines: list[str]) -> tuple[str, Span] | None:
    """The function and the whole line of `path` a node of an exported or captured graph came from (its stack
    trace's innermost frame in the user's file); None for placeholders, outputs and nodes of torch's own code."""
    if n.op in ("placeholder", "output"):
        return None
    where = innermost_user_line(n.meta.get("stack_trace", ""), path)
    if where is None:
        return None
    function, line = where
    return function, whole_line(line, lines)


def _signature(ep: Any) -> list:
    return [[n.name, n.op, target_text(n)] for n in ep.graph.nodes]


def line_counts(ep: Any, path: str) -> list[list[int]]:
    """[line, nodes] for each line of `path` the program's nodes come from (placeholders and outputs left
    out): what specialise.py compares between the example's graph and the scaled one."""
    counts: dict[int, int] = {}
    for n in ep.graph.nodes:
        where = (
            innermost_user_line(n.meta.get("stack_trace", ""), path) if n.op not in ("placeholder", "output") else None
        )
        if where:
            counts[where[1]] = counts.get(where[1], 0) + 1
    return [[line, count] for line, count in sorted(counts.items())]


def program_summary(ep: Any) -> dict:
    return {"signature": _signature(ep), "sizes": {n.name: plain_sizes(n.meta.get("val")) for n in ep.graph.nodes}}


def _scaled_export(
    module: torch.nn.Module,
    inputs: tuple,
    kwargs: dict,
    path: str,
    rebuild: Callable | None,
    then: Callable[[Any], dict] | None = None,
    describe: Describe | None = None,
) -> ForkedCall:
    """A static export of the inputs with B doubled and T tripled, for naming sizes (see values.scale_up),
    in a forked process.

    One export with symbolic sizes (Dim.AUTO) costs ~3x a static one (22 s vs 6.7 s on a 70B-shaped
    decoder), so fxlens exports twice statically and reads B and T off the two runs, as the fx level
    does. Only plain data comes back: the sizes, the nodes per source line (for specialise.py), and what
    `describe(program, seconds)` makes of the graph. `then(ep)`:
    asked for later (ForkedCall.more_result), on the same scaled program, in the same process: a deeper level that
    needs it scaled (core-aten's decompositions) does not export it again.
    """
    exported: list[Any] = []

    def summary() -> dict:
        try:
            started = time.perf_counter()
            # with stack traces: where this graph differs from the example's, the specialisation hints read
            # its nodes' lines from here, instead of exporting the scaled inputs a third time to map them
            exported.append(export_example(module, inputs, kwargs, rebuild).value)
            seconds = time.perf_counter() - started
            return {
                **program_summary(exported[0]),
                "lines": line_counts(exported[0], path),
                "described": describe(exported[0], seconds) if describe else None,
            }
        except Exception as error:  # noqa: BLE001  the user's code failing for larger sizes: a hint says where
            frames = user_frames(error, path)  # the line that fails for larger sizes: see specialise.py
            return {"error": message_text(error), "line": frames[-1][2] if frames else None}

    def after(more: Callable[[Any], dict]) -> dict:
        if not exported:
            return {"error": "the export with larger batch/sequence sizes failed"}
        try:
            with without_stack_traces():
                return more(exported[0])
        except Exception as error:  # noqa: BLE001  the deeper level's work on the scaled program: its note says why
            return {"error": message_text(error)}

    return ForkedCall(summary, partial(after, then) if then is not None else None)


def twins_in(ep: Any, scaled: dict) -> tuple[dict[str, Any], str]:
    """Each node's value in the scaled export, matched by name; ({}, why) when the graphs differ."""
    if "error" in scaled:
        return {}, f"sizes are the example's (exporting with larger batch/sequence sizes failed: {scaled['error']})"
    if scaled["signature"] != _signature(ep):
        return {}, "sizes are the example's (larger batch/sequence sizes give a different graph)"
    return {name: twin_of(sizes) for name, sizes in scaled["sizes"].items()}, ""


@dataclass
class ExportHooks:
    """What the aten level's caller does with what it exports (see `run`)."""

    programs: list[dict | None] = field(default_factory=list)
    describe_program: Describe | None = None
    on_export: Callable[[Any], None] | None = None
    scaled_then: Callable[[Any], dict] | None = None
    on_scaled: Callable[[ForkedCall], None] | None = None


def run(
    example: Any, path: str, lines: list[str], class_span: Span, hooks: ExportHooks, names: bool = True
) -> LevelResult:
    """The level's result; what `hooks.describe_program` makes of each graph exported is appended to `programs`,
    and the ExportedProgram is handed to `on_export` (deeper levels decompose it instead of exporting again).
    With free sizes and `scaled_then`, the forked process that exported the scaled inputs is handed to
    `on_scaled`, still holding that program: `scaled_then(program)` runs there when asked.
    `names=False`: nobody reads the shapes (a check's findings), so the scaled export runs only where it can
    find a specialisation hint (size_probe.could_depend); the shapes then keep the example's numbers."""
    started = time.perf_counter()
    programs, describe_program, on_export = hooks.programs, hooks.describe_program, hooks.on_export
    scaled_then, on_scaled = hooks.scaled_then, hooks.on_scaled
    if example.inputs is None:
        return LevelResult("aten", False, note="no example inputs: torch.export needs them")
    free = example.dims if example.dims and any(example.dims) else None
    if free and not names and not size_probe.could_depend(example, free):
        free = None
    rebuild = getattr(example, "rebuild", None)
    flat = example.flat()
    scaled = None
    if free:
        scaled_inputs, scaled_kwargs = example.unflat(scale_up(flat, free))
        scaled = _scaled_export(
            example.instance, scaled_inputs, scaled_kwargs, path, rebuild, scaled_then, describe_program
        )
    try:
        ran = export_example(example.instance, example.inputs, example.kwargs, rebuild)
    except Exception as error:  # noqa: BLE001  the export of the user's code failing: the level's diagnostic
        if scaled is not None:
            scaled.cancel()
        diagnostic = classify(error, path, lines, "trace", "aten", class_span)
        return LevelResult("aten", False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)
    ep = ran.value
    if on_export is not None:
        on_export(ep)
    devices.note(example.build, ran)
    if describe_program is not None:
        programs.append(describe_program(ep, time.perf_counter() - started))
    twins: dict[str, Any] = {}
    note, scaled_summary = "", {}
    if scaled is not None:
        try:
            scaled_summary = scaled.result()
            if describe_program is not None:
                programs.append(scaled_summary.get("described"))
            if scaled_then is not None and on_scaled is not None:
                on_scaled(scaled)
            twins, note = twins_in(ep, scaled_summary)
        except Lost as lost:
            note = f"sizes are the example's (the process exporting larger batch/sequence sizes: {lost})"
    sizes = SampledSizes(free_sizes(flat, free) if free else {})  # free: the scaled export ran
    nodes = nodes_of(ep, path, lines, sizes, twins)
    hints = specialise.hints(example, free, scaled_summary, nodes, lines) if free and note and scaled_summary else []
    overloads.add_flops(ep.graph, nodes)
    return LevelResult(
        "aten",
        True,
        nodes,
        hints,
        ep.graph_module.code,
        time.perf_counter() - started,
        note,
        schemas=overloads.schemas(ep.graph),
    )

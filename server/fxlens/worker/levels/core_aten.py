"""The `core-aten` level: the exported program after `run_decompositions()`, core ATen ops only
(`aten.linear.default` becomes `aten.permute.default` + `aten.addmm.default` in torch 2.13).

It decomposes the aten level's ExportedProgram when that level ran (the export is not repeated) and
exports on its own otherwise. Decomposed nodes keep the stack trace of the op they came from, so they
map to the user's line as the aten level's nodes do. Free sizes (B, T) are named the aten level's way:
in a forked process, the scaled inputs' program is decomposed too, and each size read off the pair. When
the aten level ran, that is the program its own forked process exported (still holding it): the scaled
inputs are not exported a second time; otherwise they are exported there first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from fxlens.report import LevelResult, Span
from fxlens.worker.failures.classify import classify, message_text
from fxlens.worker.levels import aten as trace_aten
from fxlens.worker.levels import overloads
from fxlens.worker.levels.forked import ForkedCall, Lost
from fxlens.worker.levels.values import SampledSizes, free_sizes, scale_up

LEVEL = "core-aten"


def decompose(ep: Any) -> Any:
    """torch's own default: the core ATen decomposition table."""
    return ep.run_decompositions()


def scaled_summary(scaled_ep: Any) -> dict:
    """Run in a forked process, on the aten level's scaled program: its decomposition's sizes."""
    return trace_aten.program_summary(decompose(scaled_ep))


def _scaled_decomposed(module: torch.nn.Module, inputs: tuple, kwargs: dict, rebuild: Callable | None) -> ForkedCall:
    """The scaled inputs exported and decomposed in a forked process; only plain sizes come back."""

    def summary() -> dict:
        try:
            with trace_aten.without_stack_traces():  # only sizes come back
                exported = trace_aten.export_example(module, inputs, kwargs, rebuild).value
                return trace_aten.program_summary(decompose(exported))
        except Exception as error:  # noqa: BLE001  the scaled inputs failing: the note says the sizes are the example's
            return {"error": message_text(error)}

    return ForkedCall(summary)


def _failed(diagnostic: Any, started: float) -> LevelResult:
    diagnostic.level = LEVEL
    return LevelResult(LEVEL, False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)


@dataclass
class FromAten:
    """What the aten level left for this one."""

    exported: Any = None  # its ExportedProgram, if it ran
    # it ran and failed (its diagnostic already says where, so this level does not export again to say it twice)
    failed: bool = False
    forked: ForkedCall | None = None  # its process holding the scaled program (see aten.run's `scaled_then`)


def run(
    example: Any, path: str, lines: list[str], class_span: Span, aten: FromAten | None = None, names: bool = True
) -> LevelResult:
    """`aten`: what the aten level left (FromAten); `names=False`: nobody reads the shapes (a check), so no scaled
    program is decomposed: its only use here is naming B and T."""
    started = time.perf_counter()
    aten = aten if aten is not None else FromAten()
    exported, export_failed, forked = aten.exported, aten.failed, aten.forked
    if example.inputs is None:
        return LevelResult(LEVEL, False, note="no example inputs: torch.export needs them")
    if export_failed:
        return LevelResult(
            LEVEL,
            False,
            note="nothing to decompose: the aten level's export failed (its diagnostic says where)",
            seconds=time.perf_counter() - started,
        )
    free = example.dims if example.dims and any(example.dims) and names else None
    rebuild = getattr(example, "rebuild", None)
    flat = example.flat()
    if not free:
        scaled = None
    elif exported is not None and forked is not None:
        forked.start_more()
        scaled = forked
    else:
        scaled_inputs, scaled_kwargs = example.unflat(scale_up(flat, free))
        scaled = _scaled_decomposed(example.instance, scaled_inputs, scaled_kwargs, rebuild)
    try:
        if exported is None:
            exported = trace_aten.export_for(example)
        decomposed = decompose(exported)
    except Exception as error:  # noqa: BLE001  torch failing on the user's program: the level's diagnostic
        if scaled is not None:
            scaled.cancel()
        # an export failure is torch.export's, classified as the aten level's are
        stage_level = "aten" if exported is None else LEVEL
        diagnostic = classify(error, path, lines, "trace", stage_level, class_span)
        if exported is not None and diagnostic.category == "trace":
            diagnostic.explanation = (
                f"torch.export traced this module, but decomposing its graph to core ATen "
                f"(run_decompositions) raised {type(error).__name__}."
            )
            diagnostic.fix = (
                "The aten level's graph stands; a decomposition that fails is usually an op "
                "without a core ATen decomposition (a custom op: register one) or a torch bug."
            )
        return _failed(diagnostic, started)
    twins: dict[str, Any] = {}
    note = ""
    if scaled is not None:
        try:
            twins, note = trace_aten.twins_in(decomposed, scaled.more_result() if scaled is forked else scaled.result())
        except Lost as lost:
            note = f"sizes are the example's (the process exporting larger batch/sequence sizes: {lost})"
    sizes = SampledSizes(free_sizes(flat, free) if free else {})  # free: the scaled export ran
    nodes = trace_aten.nodes_of(decomposed, path, lines, sizes, twins)
    overloads.add_flops(decomposed.graph, nodes)
    return LevelResult(
        LEVEL,
        True,
        nodes,
        [],
        decomposed.graph_module.code,
        time.perf_counter() - started,
        note,
        schemas=overloads.schemas(decomposed.graph),
    )

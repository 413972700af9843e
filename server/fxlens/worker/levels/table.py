"""The level table: each level's name (report.LEVEL_INFO, what the server reads) -> its entry point.

Every entry point is `trace(example, path, lines, class_span, context) -> LevelResult`; the context is
what one class's levels share while it is traced (dropped with the class), so a deeper level reuses
the work of the ones above it instead of redoing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxlens.report import DEEP_LEVELS, LEVELS, LevelResult, Span, in_trace_order
from fxlens.worker.levels import aten as trace_aten
from fxlens.worker.levels import backward as trace_backward
from fxlens.worker.levels import core_aten as trace_core_aten
from fxlens.worker.levels import dynamo as trace_dynamo
from fxlens.worker.levels import fx as trace_fx
from fxlens.worker.levels import inductor as trace_inductor
from fxlens.worker.levels import recompiles
from fxlens.worker.levels.forked import ForkedCall
from fxlens.worker.levels.syntax import FileSyntax


@dataclass
class ClassContext:
    # the levels this trace runs for the class (a level may leave something behind for a later one)
    levels: tuple[str, ...] = ()
    # what the caller keeps of each program the levels export (the trace child keeps warm-up recipes
    # for the next child): `describe_program(program, seconds)`, its results in `programs`
    describe_program: Callable[[Any, float], dict | None] | None = None
    programs: list[dict | None] = field(default_factory=list)
    # the aten level's ExportedProgram (None: aten did not run, or failed)
    exported: Any = None
    # the fx and aten levels' results, once they ran
    fx: LevelResult | None = None
    aten: LevelResult | None = None
    # with free sizes: the aten level's forked process, holding the scaled program for core-aten
    forked: ForkedCall | None = None
    # time.monotonic() at which the worker stops the trace (None: no limit known)
    deadline: float | None = None
    # False: nothing shows this trace's shapes (`fxlens check`), so sizes are not named B and T, and an
    # export with scaled sizes runs only where it can find a specialisation hint (levels/size_probe.py)
    names: bool = True
    # the file's syntax, one for all its classes (levels/syntax.py); None: parsed for this class alone
    syntax: FileSyntax | None = None
    # False: the fx level propagates no shapes, for a reader of its findings alone (a fix's proof where no later
    # level reads the fx result: dynamo and inductor choose their tensors by what propagation met)
    shapes: bool = True

    def close(self) -> None:
        if self.forked is not None:
            self.forked.close()
            self.forked = None


Trace = Callable[[Any, str, list[str], Span, ClassContext], LevelResult]


def _fx(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    context.fx = trace_fx.run(example, path, lines, class_span, context.syntax, context.shapes)
    return context.fx


def _aten(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    def keep(ep: Any) -> None:
        context.exported = ep

    def hold(forked: ForkedCall) -> None:
        context.forked = forked

    # a check (names=False) decomposes no scaled program (core_aten.run): the forked process is not held for it
    then = trace_core_aten.scaled_summary if "core-aten" in context.levels and context.names else None
    hooks = trace_aten.ExportHooks(context.programs, context.describe_program, keep, then, hold)
    context.aten = trace_aten.run(example, path, lines, class_span, hooks, names=context.names)
    return context.aten


def _core_aten(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    failed = context.aten is not None and not context.aten.ok
    forked, context.forked = context.forked, None
    aten = trace_core_aten.FromAten(context.exported, failed, forked)
    return trace_core_aten.run(example, path, lines, class_span, aten, names=context.names)


def _backward(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    failed = context.aten is not None and not context.aten.ok
    return trace_backward.run(example, path, lines, class_span, context.exported, export_failed=failed)


def _dynamo(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    # what the fx level found decides the tensors dynamo runs on (ms, where dynamo takes seconds): traced
    # here, unreported, when this trace did not ask for it (a deeper level computed on demand)
    fx = context.fx or trace_fx.run(example, path, lines, class_span, context.syntax)
    # beside the level's run; only the editor shows it (names=False: a check, a fix's proof)
    proof = recompiles.start(example, [spec.name for spec in example.build.inputs]) if context.names else None
    result = trace_dynamo.run(example, path, lines, class_span, fx, names=context.names)
    if result.ok:
        result.dynamic = recompiles.finish(proof)
    elif proof is not None:
        proof.cancel()
    return result


def _inductor(example: Any, path: str, lines: list[str], class_span: Span, context: ClassContext) -> LevelResult:
    # as for dynamo: the fx level says whether the forward reads values (which fake tensors cannot run)
    fx = context.fx or trace_fx.run(example, path, lines, class_span, context.syntax)
    return trace_inductor.run(example, path, lines, class_span, fx, deadline=context.deadline)


TABLE: dict[str, Trace] = {
    "fx": _fx,
    "aten": _aten,
    "core-aten": _core_aten,
    "backward": _backward,
    "dynamo": _dynamo,
    "inductor": _inductor,
}
assert set(TABLE) <= set(LEVELS), "every traced level is described in report.LEVEL_INFO"


def asked(levels: list[str]) -> tuple[str, ...]:
    """The levels to trace for a request, in trace order (a deeper one reuses the export of aten)."""
    return tuple(level for level in in_trace_order(levels) if level in TABLE)


def split(levels: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(cheap, deep): the levels every class gets first, and those traced once all of those are out."""
    return (
        tuple(level for level in levels if level not in DEEP_LEVELS),
        tuple(level for level in levels if level in DEEP_LEVELS),
    )

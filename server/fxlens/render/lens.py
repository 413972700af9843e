"""Code lens titles of a class: the graph command, then one short line of its levels' node counts."""

from __future__ import annotations

from dataclasses import dataclass

from fxlens.draft_report import MISSING_WORDS
from fxlens.render import kernels
from fxlens.render.cost import cost_compact, flops_text
from fxlens.render.ladder import rung
from fxlens.render.nodes import opcode_counts
from fxlens.report import ClassReport, LevelResult
from fxlens.units import bytes_text

SHOW_GRAPH = "Show graph"
# over a class built from guessed constructor arguments (a code action pins them as a directive)
GUESSED = "built from guessed arguments"
# inputs first, then what the module calls, then what it computes, then the result
LENS_ORDER = ("placeholder", "call_module", "get_attr", "call_function", "call_method", "output")


@dataclass
class LensTitle:
    title: str
    level: str
    # where the level's graph sits on the ladder, from its opcodes (render/ladder.py); "" for other lenses
    tooltip: str = ""


# a trace that was stopped, rather than one torch could not make: the lens says which
_STOPPED = ("timeout", "crash", "exit", "memory", "interrupt", "recursion", "too-large")


def _failure_line(result: LevelResult) -> int | None:
    errors = [d for d in result.diagnostics if d.severity == "error"] or result.diagnostics
    return errors[0].line if errors else None


def missing(report: ClassReport | None) -> str:
    """What leaves the class without a graph when that is no failure of its code ("" otherwise): not
    built, no inputs for forward, or fxlens's guesses rejected (the drafted directive says which)."""
    if report is None:
        return ""
    if report.draft is not None:
        return MISSING_WORDS.get(report.draft.missing, "")
    if report.build.how == "unbuilt":
        return MISSING_WORDS["construction"]
    return MISSING_WORDS["inputs"] if report.build.inputs_source == "none" else ""


def _failure_word(result: LevelResult, report: ClassReport | None = None) -> str:
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if errors and errors[0].category in _STOPPED:
        return errors[0].category
    why = missing(report)
    if (why and not errors) or any(d.category in ("construction", "placeholder") for d in errors):
        # a level that never ran for want of an instance or inputs, or the build's own error: never
        # "untraceable", which would blame the code for what fxlens lacks
        return why or MISSING_WORDS["construction"]
    return "untraceable"


def level_title(level: str, result: LevelResult, report: ClassReport | None = None) -> str:
    if not result.ok:
        what = _failure_word(result, report)
        line = _failure_line(result)
        return f"{level}: {what}" + (f" — line {line}" if line is not None else "")
    if kernels.is_kernel_level(result):
        return f"{level}: {kernels.counts_text(result)}"
    if result.graphs is not None:
        return _graphs_title(level, result)
    if any(n.phase for n in result.nodes):
        return _phases_title(level, result)
    total = len(result.nodes)
    title = f"{level}: {total} node{'s' if total != 1 else ''}"
    if level == "fx":
        counts = opcode_counts(result)
        title += " (" + " · ".join(f"{counts[op]} {op}" for op in LENS_ORDER if counts.get(op)) + ")"
    return title


def _graphs_title(level: str, result: LevelResult) -> str:
    """`dynamo: 3 graphs, 2 breaks`, or `dynamo: 1 graph, fullgraph ok` (torch.compile(fullgraph=True) works)."""
    graphs = f"{result.graphs} graph{'s' if result.graphs != 1 else ''}"
    if not result.breaks:
        return f"{level}: {graphs}, fullgraph ok"
    return f"{level}: {graphs}, {result.breaks} break{'s' if result.breaks != 1 else ''}"


def size_text(count: int) -> str:
    return bytes_text(count)


def _phases_title(level: str, result: LevelResult) -> str:
    """`backward: 13 fwd + 22 bwd nodes, saves 448 B` (what the forward keeps alive for backward)."""
    forward = sum(1 for n in result.nodes if n.phase == "forward")
    saved = sum(n.bytes or 0 for n in result.nodes if n.saved)
    return f"{level}: {forward} fwd + {len(result.nodes) - forward} bwd nodes, saves {size_text(saved)}"


def _tooltip(result: LevelResult) -> str:
    if not result.ok:
        return ""
    position = rung(result)
    return f"{position.name}: {position.why}"


def short_level(level: str, result: LevelResult, report: ClassReport | None = None) -> str:
    """One level in the summary lens: `fx 421`, `dynamo 2 breaks`, `fx untraceable, line 13`, `aten no inputs`."""
    if not result.ok:
        line = _failure_line(result)
        return f"{level} {_failure_word(result, report)}" + (f", line {line}" if line is not None else "")
    if kernels.is_kernel_level(result):
        return f"{level} {kernels.counts_text(result)}"
    if result.graphs is not None:
        return (
            f"{level} {result.breaks} break{'s' if result.breaks != 1 else ''}" if result.breaks else f"{level} 1 graph"
        )
    return f"{level} {len(result.nodes)}"


def _flops(report: ClassReport) -> str:
    """The class's FLOPs at the example size, forward and backward together: `2.7 TFLOP`."""
    cost = report.cost
    if cost is None or cost.forward_flops is None:
        return ""
    return flops_text(cost.forward_flops + (cost.backward_flops or 0))


def summary_tooltip(report: ClassReport, levels: tuple[str, ...]) -> str:
    """What the short lens leaves out, for its tooltip: every level's full title and rung, then the cost."""
    lines = []
    for level in levels:
        result = report.levels.get(level)
        if result is not None:
            rung_text = _tooltip(result)
            lines.append(level_title(level, result, report) + (f" — {rung_text}" if rung_text else ""))
    compact = cost_compact(report)
    if compact:
        lines.append(compact)
    return "\n".join(lines)


def class_lenses(report: ClassReport, levels: tuple[str, ...], stale: bool = False) -> list[LensTitle]:
    """`Show graph`, then one short line (`fx 421 · aten 477 · 2.7 TFLOP`): a lens row per level and the
    opcode breakdown pushed the graph link past the right edge at 1400 px. The breakdown is the
    summary's tooltip (and the class hover's table)."""
    suffix = " (stale)" if stale else ""
    shown = [level for level in levels if level in report.levels]
    titles = [LensTitle(SHOW_GRAPH, "fx", f"Open the graph view of {report.name}")]
    parts = [short_level(level, report.levels[level], report) for level in shown]
    flops = _flops(report)
    if flops:
        parts.append(flops)
    if parts:
        # the summary opens the first level that traced (the failing one shows its problem)
        opened = next((level for level in shown if report.levels[level].ok), shown[0] if shown else "fx")
        titles.append(LensTitle(" · ".join(parts) + suffix, opened, summary_tooltip(report, tuple(shown))))
    if report.build.how == "guessed":
        titles.append(LensTitle(GUESSED + suffix, "fx"))
    return titles

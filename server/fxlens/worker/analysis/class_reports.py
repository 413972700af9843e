"""The parts of a class's report that are no trace: its members, and the whole report of a class that is not
traced (execution off, a hang or crash in an earlier run, no instance built) or the diagnostic of fxlens's own
failure at a level.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.nn.parameter import is_lazy

from fxlens.report import ClassReport, Diagnostic, LevelResult, Member, Span
from fxlens.worker.analysis.bounds import bound_diagnostic
from fxlens.worker.failures.classify import traceback_text, whole_line
from fxlens.worker.levels.values import dtype_name
from fxlens.worker.load import loader
from fxlens.worker.load.discover import ClassSource
from fxlens.worker.load.skipped_names import explain_skipped


def failed_report(source: ClassSource, failed: dict, levels: list[str], lines: list[str]) -> ClassReport:
    """A class whose hang or crash ended an earlier run: its diagnostic is its result at every level."""
    diagnostic = Diagnostic(**failed)
    diagnostic.class_name, diagnostic.level = source.name, levels[0]
    if diagnostic.line == 0:  # where in the class is unknown: the class line
        whole_line(source.line, lines).copy_to(diagnostic)
    report = ClassReport(source.name, source.line, source.end_line)
    for level in levels:
        report.levels[level] = LevelResult(level, False, note=f"not traced: {diagnostic.message}")
    report.levels[levels[0]].diagnostics.append(diagnostic)
    return report


def lost_level_result(level: str, lost: dict, class_name: str, class_span: Span) -> LevelResult:
    """Level `level` of a class, not traced: a compile level's hang or crash (`lost`, its diagnostic) ended an earlier
    run, and the other levels were traced again without it."""
    diagnostic = Diagnostic(**lost)
    diagnostic.class_name = class_name
    if diagnostic.line == 0:  # where in the class is unknown: the class line
        class_span.copy_to(diagnostic)
    if level != diagnostic.level:  # (said once, at the level lost)
        return LevelResult(level, False, note=f"not traced: it compiles through the {diagnostic.level} level, lost")
    return LevelResult(level, False, diagnostics=[diagnostic], note=f"not traced: {diagnostic.message}")


def execution_off_report(source: ClassSource, levels: list[str], lines: list[str]) -> ClassReport:
    """`execution = off` (an untrusted workspace): a class read from the syntax tree, with nothing run."""
    report = ClassReport(source.name, source.line, source.end_line)
    for level in levels:
        report.levels[level] = LevelResult(level, False, note="execution is off: no code ran")
    span = whole_line(source.line, lines)
    report.levels[levels[0]].diagnostics.append(
        Diagnostic.at(
            span,
            "information",
            "execution-off",
            "fxlens.execution is `off` (e.g. an untrusted workspace): no code of this file ran, so there is no graph",
            fix="Trust the workspace or set fxlens.execution to `safe`.",
            level=levels[0],
            class_name=source.name,
        )
    )
    return report


def unbuilt_report(
    source: ClassSource,
    example: Any,
    class_span: Span,
    levels: list[str],
    skipped: list[loader.Skipped],
    execution: str,
) -> ClassReport:
    """A class with no instance: `example` is a Diagnostic, a failing directive's [error, note at the
    directive], or why it cannot be built."""
    report = ClassReport(source.name, source.line, source.end_line)
    diagnostics = (
        example
        if isinstance(example, list)
        else [
            example
            if isinstance(example, Diagnostic)
            else Diagnostic.at(
                class_span,
                "error",
                "construction",
                f"fxlens cannot build {source.name}: {example}",
                "Without an instance there is nothing to trace.",
                f"Add a comment above the class: `# fxlens: {source.name}(...)(torch.randn(...))`.",
            )
        ]
    )
    for diagnostic in diagnostics:
        diagnostic.class_name, diagnostic.level = source.name, levels[0]
        explain_skipped(diagnostic, skipped, execution)
        bound_diagnostic(diagnostic)
    for level in levels:
        report.levels[level] = LevelResult(level, False, note=f"{source.name} was not built")
    report.levels[levels[0]].diagnostics.extend(diagnostics)
    return report


def internal_failure(error: Exception, level: str, span: Span) -> Diagnostic:
    return Diagnostic.at(
        span,
        "error",
        "internal",
        f"{type(error).__name__}: {error}",
        "fxlens itself failed while tracing this level; this is a bug in fxlens.",
        "Please report it with this file; other classes are not affected.",
        level=level,
        traceback=traceback_text(error),
    )


def members(source: ClassSource, instance: nn.Module) -> list[Member]:
    found = []
    for name, child in instance.named_children():
        found.append(Member(name, "module", type(child).__name__, line=source.member_lines.get(name)))
    for kind, items in (("parameter", instance.named_parameters()), ("buffer", instance.named_buffers())):
        for name, tensor in items:
            owner = name.split(".")[0]
            found.append(
                Member(
                    name,
                    kind,
                    "Tensor",
                    None if is_lazy(tensor) else [int(s) for s in tensor.shape],  # (a lazy module's: no shape yet)
                    dtype_name(tensor.dtype),
                    line=source.member_lines.get(owner),
                )
            )
    return found

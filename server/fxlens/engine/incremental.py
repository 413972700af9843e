"""What an edit leaves standing: whether a trace is needed at all, which earlier traces the worker may
keep, and the fresh report completed with them.

The worker decides per class (worker/load/fingerprint.py): it builds every class and traces only those whose
fingerprint differs from the one the last trace had. The server only spares the worker a run when
nothing a trace could see changed (the same classes and module code, lines merely moved).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fxlens.engine.documents import Traced
from fxlens.engine.parsing import cheap_outline
from fxlens.engine.shift import LineMap, LineMapping, shift_class, shift_report
from fxlens.engine.worker_client import TraceOptions
from fxlens.outline import Outline
from fxlens.report import ClassReport, Cost


def needs_trace(
    good: Traced | None, text: str, options: TraceOptions, outline_of: Callable[[str], Outline | None] = cheap_outline
) -> bool:
    """False when `text` differs from the last good trace's only in where things are."""
    if good is None or good.options != options:
        return True
    old, new = outline_of(good.text), outline_of(text)
    return old is None or new is None or old != new


def known_fingerprints(good: Traced | None, options: TraceOptions) -> dict[str, str]:
    """Class name -> fingerprint of its last trace: the classes the worker need not trace again."""
    if good is None or good.options != options:
        return {}
    return {c.name: c.fingerprint for c in good.report.classes if c.fingerprint}


def classes_without_cost(good: Traced | None, options: TraceOptions) -> list[str]:
    """The classes of the last trace whose cost never came (counted after `done`, cut short by an edit):
    held unchanged, they get it counted anyway."""
    if good is None or good.options != options or not options.cost:
        return []
    return [c.name for c in good.report.classes if c.fingerprint and c.cost is None]


def with_cost(
    cls: ClassReport, held_text: str, traced_text: str, name: str, fingerprint: str | None, cost: Cost
) -> ClassReport:
    """`cls` (held, traced from `held_text`) with the cost counted for class `name` of a trace of
    `traced_text` at `fingerprint`, when it is that class: same fingerprint, or the very text."""
    if cls.name != name or not ((fingerprint and cls.fingerprint == fingerprint) or held_text is traced_text):
        return cls
    return replace(cls, cost=cost)


def merge(good: Traced | None, fresh: Traced, line_map: Callable[[str, str], LineMapping] = LineMap) -> Traced:
    """The fresh report, completed with the previous trace of each class the worker left unchanged."""
    if good is None or not fresh.report.unchanged:
        return fresh
    lines = line_map(good.text, fresh.text)
    kept = [
        moved
        for c in good.report.classes
        if c.name in fresh.report.unchanged
        if (moved := shift_class(c, lines)) is not None
    ]
    fresh.report.classes = sorted(fresh.report.classes + kept, key=lambda c: c.line)
    return fresh


def reuse(good: Traced, version: int, text: str, line_map: Callable[[str, str], LineMapping] = LineMap) -> Traced:
    """The previous result restamped for a text that differs from it in nothing a trace can see."""
    report = shift_report(good.report, line_map(good.text, text))
    return Traced(
        version, text, replace(report, unchanged=[c.name for c in report.classes]), good.options, good.workspace_context
    )

"""One diagnostic per cause: the rule every place that lists problems follows (the editor's diagnostics,
the hover, `fxlens check` in each format).

The worker reports per level: a data-dependent `if` fails at fx (TraceError), at aten, core-aten and
backward (torch's guard on a data-dependent expression), and breaks dynamo's graph, all at one span. A
user sees one problem there, so those diagnostics are merged when they share a span and a cause (the
category; a graph break's cause is the category its registry id stands for): the merged one says in
plain words which levels fail and why, its severity is the worst of theirs, and each level's own text
stays with it (`Cause.parts`). Diagnostics at other spans or of other causes stay apart.

Pure: report diagnostics in, causes out (no torch, no LSP); the consumers format them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from fxlens.report import LEVELS, Diagnostic

SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}
GRAPH_BREAK = "graph-break"

# graph breaks whose registry id names a cause the other levels report under a category of their own
BREAK_CAUSES = {
    "GB0170": "data-dependent-control-flow",  # Data-dependent branching
    "GB0035": "data-dependent-control-flow",  # Data-dependent branching with non-constant __bool__
    "GB0034": "data-dependent-control-flow",  # Data-dependent assertion failed
    "GB0124": "item/numpy",  # Unsupported Tensor.item() call with capture_scalar_outputs=False
    "GB0105": "item/numpy",  # Tensor.numpy() with trace_numpy=False
    "GB0109": "item/numpy",  # Tensor.tolist() with non-integer tensor
}

# what "cannot trace ..." names, per cause; a cause without one reads "fail here"
WHAT = {
    "data-dependent-control-flow": "this data-dependent branch",
    "proxy-iteration": "this loop over a traced value",
    "proxy-as-integer": "this use of a traced value as a Python int",
    "proxy-as-number": "this use of a traced value as a Python number",
    "builtin-on-proxy": "this built-in call on a traced value",
    "item/numpy": "this read of a tensor's value",
    "einops-on-proxy": "this einops call on a traced value",
    "map-over-proxy": "this unpacking of a traced value",
    "factory-with-traced-size": "this tensor factory with a traced size",
    "distribution-on-proxy": "this torch.distributions call on a traced value",
    "decorated-forward": "this decorated forward",
    "unsupported-type": "this value of an unsupported type",
    "library-internal": "this call into a library",
}

# torch's guard messages, in plain words (torch's own text is kept beneath)
_GUARD = re.compile(r"GuardOnDataDependentSymNode|Could not guard on data-dependent expression")
_SPECIALIZE = re.compile(r"Could not extract specialized integer from data-dependent expression")


@dataclass(frozen=True)
class Cause:
    """One problem at one span: `diagnostic` is what is shown, `parts` each level's own diagnostic in
    ladder order (a single part is shown as it is, its guard message translated)."""

    diagnostic: Diagnostic
    parts: tuple[Diagnostic, ...]

    @property
    def levels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.level for d in self.parts if d.level))

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.class_name for d in self.parts if d.class_name))

    @property
    def merged(self) -> bool:
        return len(self.parts) > 1

    def where(self) -> str:
        """`Gate, fx` for one level's diagnostic; `Gate: fx, aten, dynamo` for a merged one; "" for none."""
        classes, levels = ", ".join(self.classes), ", ".join(self.levels)
        if not self.merged:
            return f"{classes}, {levels}" if classes and levels else ""
        return f"{classes}: {levels}" if classes and levels else classes or levels


def cause_of(d: Diagnostic) -> str:
    """What a diagnostic is about: its category; a graph break's known registry id stands for the
    category the other levels give the same construct."""
    if d.category == GRAPH_BREAK and d.gb_id in BREAK_CAUSES:
        return BREAK_CAUSES[d.gb_id]
    return d.category


def plain(d: Diagnostic) -> str | None:
    """torch's message in plain words, when it is one of its guard messages; None otherwise."""
    if _GUARD.search(d.message):
        if d.category == "data-dependent-control-flow":
            return "the branch depends on a value computed from the input"
        return "the code decides on a value computed from the input, which tracing does not know"
    if _SPECIALIZE.search(d.message):
        return "the code needs a Python number computed from the input, which tracing does not know"
    return None


def part_text(d: Diagnostic) -> str:
    """A level's text on one line: torch's message, after its plain words when there are some."""
    first = d.message.strip().splitlines()[0] if d.message.strip() else d.message
    words = plain(d)
    return f"{words} (torch: {first})" if words else first


def related_text(d: Diagnostic, classes: int = 1) -> str:
    """`aten: <text>` (with the class when the cause spans several): one entry of relatedInformation."""
    who = " · ".join(filter(None, [d.class_name if classes > 1 else None, d.level]))
    return f"{who}: {part_text(d)}" if who else part_text(d)


def words(items: Iterable[str]) -> str:
    """`fx`, `fx and aten`, `fx, aten and backward`."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _rank(d: Diagnostic) -> tuple[int, int]:
    return (LEVELS.index(d.level) if d.level in LEVELS else len(LEVELS), SEVERITY_RANK.get(d.severity, 4))


def _summary(parts: list[Diagnostic], cause: str) -> str:
    failing = list(dict.fromkeys(d.level for d in parts if d.severity == "error" and d.level))
    breaks = [d for d in parts if d.category == GRAPH_BREAK]
    messages = list(dict.fromkeys(d.message for d in parts if d.category != GRAPH_BREAK))
    same = messages[0].strip().splitlines()[0] if len(messages) == 1 and messages[0].strip() else ""
    if failing:
        what = WHAT.get(cause)
        head = (
            f"{words(failing)} cannot trace {what}"
            if what
            else f"{words(failing)} fail{'s' if len(failing) == 1 else ''} here" + (f": {same}" if same else "")
        )
    elif not messages:  # only graph breaks (a parent's and a child's dynamo level): torch's words stand
        head = breaks[0].message
    else:
        levels = list(dict.fromkeys(d.level for d in parts if d.level and d.category != GRAPH_BREAK))
        head = f"{words(levels)}: {same}" if levels and same else same or messages[0]
    if breaks and (failing or messages):
        head += "; torch.compile breaks the graph here" + (f" [{breaks[0].gb_id}]" if breaks[0].gb_id else "")
    classes = list(dict.fromkeys(d.class_name for d in parts if d.class_name))
    return head + (f" (in {words(classes)})" if len(classes) > 1 else "")


def _one(parts: list[Diagnostic]) -> Cause:
    parts = sorted(parts, key=_rank)
    if len(parts) == 1:
        d = parts[0]
        said = plain(d)
        return Cause(replace(d, message=f"{said}\n{d.message}") if said else d, (d,))
    cause = cause_of(parts[0])
    worst = min(parts, key=lambda d: SEVERITY_RANK.get(d.severity, 4))
    lead = next((d for d in parts if d.severity == worst.severity and d.category != GRAPH_BREAK), worst)
    brk = next((d for d in parts if d.category == GRAPH_BREAK), None)
    explained = next((d for d in parts if d.explanation and d.category != GRAPH_BREAK), lead)
    fixed = next((d for d in parts if d.fix and d.category != GRAPH_BREAK), lead)
    # only graph breaks (a parent's and a child's): still a graph break
    category = cause if any(d.category != GRAPH_BREAK for d in parts) else GRAPH_BREAK
    shown = replace(
        lead,
        severity=worst.severity,
        category=category,
        message=_summary(parts, cause),
        explanation=explained.explanation,
        fix=fixed.fix,
        gb_id=brk.gb_id if brk is not None else lead.gb_id,
        hints=list(brk.hints) if brk is not None else list(lead.hints),
    )
    return Cause(shown, tuple(parts))


def merge(diagnostics: Iterable[Diagnostic]) -> list[Cause]:
    """The causes among `diagnostics`: those sharing a span and a cause merged into one, in the order
    their first diagnostic came; an exact copy (the same level's diagnostic held twice) is kept once."""
    groups: dict[tuple[int, int, int, int, str], list[Diagnostic]] = {}
    for d in diagnostics:
        parts = groups.setdefault((d.line, d.col, d.end_line, d.end_col, cause_of(d)), [])
        if d not in parts:
            parts.append(d)
    return [_one(parts) for parts in groups.values()]

"""Fixes that prove themselves: source edits for a finding, and the proof the trace child made of them.

Plain data, stdlib only (report.py carries a class's fixes in `ClassReport.fixes`). Coordinates are the
report's: 1-based lines, 0-based UTF-8 byte columns. A fix is offered only when `proof.proven`; one whose
proof failed, or that no rewrite can keep the semantics of, still travels, so that the diagnostic can say
which check failed or why none is offered.

`apply_edits` is the one way a fix changes a text (the CLI's `--fix`, the editor's quick fix and any other
front end give the same edits): each edit says the text it replaces, and a text that no longer holds it
is refused (`StaleFix`) instead of edited in the wrong place.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass, field
from typing import Any

from fxlens import lines as line_model
from fxlens.plain_data import from_fields


@dataclass
class TextEdit:
    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str
    old_text: str = ""  # what the range held in the text the fix was proven on


@dataclass
class LevelCheck:
    """One level re-traced on the fixed text: its findings before and after."""

    level: str
    # the dynamo level counts graph breaks; the others count failures (errors and warnings)
    what: str
    before: int
    after: int
    new: list[str] = field(default_factory=list)  # findings the fixed text has that the original had not
    seconds: float = 0.0  # the re-trace
    trace_seconds: float = 0.0  # the class's own trace at this level
    unclaimed: str = ""  # why the rewrite leaves this level's finding ("": it claims it gone)


@dataclass
class FixProof:
    proven: bool = False
    failed: str = ""  # which check failed, in words; "" when proven
    levels: list[LevelCheck] = field(default_factory=list)
    inputs: int = 0  # input sets both modules ran on (the example's, then seeded draws)
    modes: list[str] = field(default_factory=list)  # "eval", and "train" where the module's outputs differ
    # "equal": bit for bit; "close": within rtol/atol; "" when not compared
    outputs: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    max_abs_diff: float = 0.0
    state_equal: bool = False  # parameters, buffers and plain attributes after every call
    printed_equal: bool = False  # what the calls printed and warned, in eager
    # the arguments whose tensors the original changed for the caller and the fix does not (declared by the
    # rewrite, and the only differences the proof allowed in the caller's tensors after the call)
    inputs_changed: list[str] = field(default_factory=list)
    # lines the fix replaces that no input compared ran (worker/fixes/coverage.py): no output shows that branch
    unreached: list[int] = field(default_factory=list)
    # loops whose count the fix replaces that every input compared ran the same number of times (by first body line)
    unvaried: list[int] = field(default_factory=list)
    seconds: float = 0.0  # the whole proof: load the copy, re-trace, run both modules
    # where those seconds went: "build" (the original on real tensors), "load" (the edited copy imported, the
    # instance's classes swapped), "outputs" (both modules run, "coverage" of it finding the inputs); the re-trace
    # is each LevelCheck's own seconds
    phases: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """`graph breaks 2 → 0, outputs equal on 3 inputs` (what the quick fix's title and --fix say)."""
        parts = [f"{c.what} {c.before} → {c.after}" + (f" ({c.unclaimed})" if c.unclaimed else "") for c in self.levels]
        if self.outputs:
            parts.append(
                f"outputs {self.outputs} on {self.inputs} inputs"
                + (" (train and eval)" if "train" in self.modes else "")
                + (f", none of which runs line {', '.join(map(str, self.unreached))}" if self.unreached else "")
                + (
                    f", each running the loop at line {', '.join(map(str, self.unvaried))} the same number of times"
                    if self.unvaried
                    else ""
                )
            )
        parts += [f"the caller's `{name}` no longer changed" for name in self.inputs_changed]
        return ", ".join(parts)


@dataclass
class Fix:
    id: str  # stable for the same finding and edit: "torch-where:Gate:15:11"
    rule: str  # the rewrite (worker/fixes TABLE)
    title: str  # "Replace with torch.where"
    class_name: str
    level: str  # the level the finding was at
    category: str
    line: int  # the finding's span
    col: int
    end_line: int
    end_col: int
    what: str = ""  # what the rewrite does and what it costs
    edits: list[TextEdit] = field(default_factory=list)  # [] when no rewrite can keep the semantics
    proof: FixProof = field(default_factory=FixProof)

    @property
    def proven(self) -> bool:
        return self.proof.proven and bool(self.edits)

    def label(self) -> str:
        """The title with its proof: "Replace with torch.where — graph breaks 2 → 0, outputs equal on 3 inputs"."""
        summary = self.proof.summary()
        return f"{self.title} — {summary}" if summary else self.title

    def why_not(self) -> str:
        """Why it is not offered: the check that failed, or why no rewrite keeps the semantics."""
        return "" if self.proven else self.proof.failed or "not proven"


class StaleFix(ValueError):
    """The text no longer holds what a fix's edit replaces (it changed since the fix was proven)."""


def _offset(starts: list[int], lines: list[str], line: int, byte_col: int) -> int:
    if not 1 <= line <= len(lines):
        raise StaleFix(f"line {line} is past the end of the text")
    text_line = lines[line - 1]
    prefix = text_line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
    return starts[line - 1] + len(prefix)


def _starts(text: str) -> list[int]:
    starts, at = [], 0
    for kept in line_model.keeping_ends(text):
        starts.append(at)
        at += len(kept)
    return starts + [at] * (line_model.count(text) - len(starts))


def edit_range(text: str, edit: TextEdit) -> tuple[int, int]:
    """The character offsets in `text` of an edit's range."""
    lines, starts = line_model.split(text), _starts(text)
    return _offset(starts, lines, edit.line, edit.col), _offset(starts, lines, edit.end_line, edit.end_col)


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """`text` with every edit made; StaleFix when a range no longer holds its `old_text`, or edits overlap."""
    lines, starts = line_model.split(text), _starts(text)
    ranges = sorted(
        ((_offset(starts, lines, e.line, e.col), _offset(starts, lines, e.end_line, e.end_col), e) for e in edits),
        key=lambda r: (r[0], r[1]),
    )
    for (_, end, _), (start, _, _) in itertools.pairwise(ranges):
        if start < end:
            raise StaleFix("two edits overlap")
    for start, end, edit in reversed(ranges):
        if text[start:end] != edit.old_text:
            raise StaleFix(f"line {edit.line} changed since the fix was proven")
        text = text[:start] + edit.new_text + text[end:]
    return text


def apply_fixes(text: str, fixes: list[Fix]) -> tuple[str, list[Fix]]:
    """The text with every proven fix that still applies, one after another in file order (a later fix whose
    edits overlap an earlier one's is left out, and one whose edits were made already counts as applied: an
    `elif`'s finding is fixed by its `if`'s rewrite); the fixes applied."""
    applied: list[Fix] = []
    edits: list[TextEdit] = []
    for fix in sorted((f for f in fixes if f.proven), key=lambda f: (f.line, f.col)):
        if fix.edits and all(e in edits for e in fix.edits):
            applied.append(fix)
            continue
        try:
            apply_edits(text, [*edits, *fix.edits])
        except StaleFix:
            continue
        edits += fix.edits
        applied.append(fix)
    return apply_edits(text, edits), applied


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(line_model.keeping_ends(before), line_model.keeping_ends(after), f"a/{path}", f"b/{path}")
    )


def fix_from_json(data: dict[str, Any]) -> Fix:
    fix = from_fields(Fix, data)
    fix.edits = [from_fields(TextEdit, e) for e in data.get("edits", [])]
    proof = data.get("proof") or {}
    fix.proof = from_fields(FixProof, proof)
    fix.proof.levels = [from_fields(LevelCheck, c) for c in proof.get("levels", [])]
    return fix


FIX_CLASSES = (TextEdit, LevelCheck, FixProof, Fix)


def shifted_line(line: int, edits: list[TextEdit]) -> int:
    """Where a line of the original text is once the edits are made (a line inside an edit: the edit's first)."""
    moved = line
    for edit in edits:
        grown = edit.new_text.count("\n") - edit.old_text.count("\n")
        if line > edit.end_line:
            moved += grown
        elif line >= edit.line:
            moved += min(line - edit.line, edit.new_text.count("\n")) - (line - edit.line)
    return moved

"""The fixes of a traced file, for every front end (the CLI's `--fix`, the editor's quick fixes, the agents'
server): which are proven, one by id, the text with them applied, and what a finding's failed proof says.

Server side: reads report data only (the proofs were made in the trace child, worker/fixes).
"""

from __future__ import annotations

from dataclasses import replace

from fxlens.fix_report import Fix, apply_edits, apply_fixes, shifted_line
from fxlens.report import Diagnostic, FileReport


def all_fixes(report: FileReport) -> list[Fix]:
    """Every fix of the file, proven or not, in line order."""
    return sorted((f for c in report.classes for f in c.fixes), key=lambda f: (f.line, f.col, f.id))


def proven_fixes(report: FileReport) -> list[Fix]:
    """The fixes that may be offered: their proof passed."""
    return [f for f in all_fixes(report) if f.proven]


def fix_by_id(report: FileReport, fix_id: str) -> Fix | None:
    return next((f for f in all_fixes(report) if f.id == fix_id), None)


def apply_fix(text: str, fix: Fix) -> str:
    """`text` with one proven fix applied; fix_report.StaleFix when the text no longer holds what it replaces,
    ValueError for a fix that is not proven."""
    if not fix.proven:
        raise ValueError(f"fix {fix.id} is not proven: {fix.why_not()}")
    return apply_edits(text, fix.edits)


def apply_all(text: str, report: FileReport) -> tuple[str, list[Fix]]:
    """`text` with every proven fix of the file that still applies; the fixes applied."""
    return apply_fixes(text, proven_fixes(report))


def fixes_at(report: FileReport, diagnostic: Diagnostic) -> list[Fix]:
    """The fixes of the finding a diagnostic shows (the same class and line: the levels reporting one statement
    are one site, worker/fixes/find.py)."""
    return [
        f
        for f in all_fixes(report)
        if f.line == diagnostic.line and (diagnostic.class_name is None or f.class_name == diagnostic.class_name)
    ]


def explained(report: FileReport) -> FileReport:
    """The report with each finding's fix text saying what fxlens's rewrite proved, or why none is offered."""
    classes = []
    for cls in report.classes:
        levels = {}
        for name, result in cls.levels.items():
            diagnostics = [_explain(d, fixes_at(report, d)) for d in result.diagnostics]
            levels[name] = replace(result, diagnostics=diagnostics)
        classes.append(replace(cls, levels=levels))
    return replace(report, classes=classes)


def _explain(diagnostic: Diagnostic, fixes: list[Fix]) -> Diagnostic:
    if not fixes:
        return diagnostic
    said = []
    for fix in fixes:
        if fix.proven:
            said.append(f"fxlens can fix it (proven: {fix.label()}).")
        else:
            said.append(f"fxlens's rewrite `{fix.title}` is not offered: {fix.why_not()}.")
    return replace(diagnostic, fix=" ".join([diagnostic.fix, *said]).strip())


def remaining(report: FileReport, applied: list[Fix]) -> FileReport:
    """The report as the fixed text stands: the findings the applied fixes removed gone, the others at their
    lines in the fixed text."""
    edits = [e for f in applied for e in f.edits]
    fixed = {(f.class_name, f.line) for f in applied}

    def moved(d: Diagnostic) -> Diagnostic:
        return replace(d, line=shifted_line(d.line, edits), end_line=shifted_line(d.end_line, edits))

    classes = []
    for cls in report.classes:
        levels = {
            name: replace(
                result,
                diagnostics=[moved(d) for d in result.diagnostics if (cls.name, d.line) not in fixed],
            )
            for name, result in cls.levels.items()
        }
        classes.append(replace(cls, levels=levels, fixes=[]))
    return replace(report, classes=classes, diagnostics=[moved(d) for d in report.diagnostics])

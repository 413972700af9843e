"""A diagnostic as CI formats need it: the file's path as the user named it, and columns counted in
characters (the report counts UTF-8 bytes; GitHub and SARIF count characters). One finding per cause
(render/causes.py): the levels failing at one span for one reason are one finding, each level's own
diagnostic kept in `parts`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from fxlens.fix_report import Fix
from fxlens.lsp.positions import character_column
from fxlens.render.causes import Cause, merge
from fxlens.report import Diagnostic, to_json


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the current directory, `/`-separated
    diagnostic: Diagnostic  # what is shown (for a merged cause: its plain-words message, worst severity)
    column: int  # 1-based, characters
    end_line: int
    end_column: int  # 1-based, characters, just past the span (SARIF's convention)
    cause: Cause | None = None  # the cause it shows; None: the diagnostic alone
    # its fixes (`fxlens check --fix/--diff`: proven or not, each with its edits and proof), as `fixes_json` writes them
    fixes: tuple[dict[str, Any], ...] = ()

    @property
    def whole(self) -> Cause:
        return self.cause if self.cause is not None else Cause(self.diagnostic, (self.diagnostic,))


def finding(path: str, d: Diagnostic, lines: list[str], cause: Cause | None = None) -> Finding:
    end_line, end_col = (d.end_line, d.end_col) if (d.end_line, d.end_col) >= (d.line, d.col) else (d.line, d.col)
    return Finding(
        path.replace("\\", "/"),
        d,
        character_column(lines, d.line, d.col),
        end_line,
        character_column(lines, end_line, end_col),
        cause,
    )


def findings(path: str, diagnostics: Iterable[Diagnostic], lines: list[str]) -> list[Finding]:
    """A file's findings, one per cause, in line order."""
    causes = sorted(merge(diagnostics), key=lambda c: (c.diagnostic.line, c.diagnostic.col))
    return [finding(path, c.diagnostic, lines, c) for c in causes]


def fix_json(fix: Fix, lines: list[str]) -> dict[str, Any]:
    """A fix as the JSON and SARIF formats carry it: its edits in the findings' columns (1-based characters)."""
    edits = [
        {
            "line": e.line,
            "column": character_column(lines, e.line, e.col),
            "end_line": e.end_line,
            "end_column": character_column(lines, e.end_line, e.end_col),
            "new_text": e.new_text,
            "old_text": e.old_text,
        }
        for e in fix.edits
    ]
    return {
        "id": fix.id,
        "rule": fix.rule,
        "title": fix.title,
        "label": fix.label(),
        "proven": fix.proven,
        "why_not": fix.why_not(),
        "what": fix.what,
        "edits": edits,
        "proof": to_json(fix.proof),
    }


def with_fixes(found: list[Finding], fixes_of: Any, lines: list[str]) -> list[Finding]:
    """Each finding with the fixes of its diagnostics (`fixes_of(diagnostic)`: engine/fixes.py's fixes_at)."""
    result = []
    for f in found:
        fixes = {fix.id: fix for d in (f.diagnostic, *f.whole.parts) for fix in fixes_of(d)}
        result.append(replace(f, fixes=tuple(fix_json(fix, lines) for fix in fixes.values())) if fixes else f)
    return result

"""A diagnostic as CI formats need it: the file's path as the user named it, and columns counted in
characters (the report counts UTF-8 bytes; GitHub and SARIF count characters). One finding per cause
(render/causes.py): the levels failing at one span for one reason are one finding, each level's own
diagnostic kept in `parts`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fxlens.lsp.positions import UTF32, byte_col_to_units
from fxlens.render.causes import Cause, merge
from fxlens.report import Diagnostic


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the current directory, `/`-separated
    diagnostic: Diagnostic  # what is shown (for a merged cause: its plain-words message, worst severity)
    column: int  # 1-based, characters
    end_line: int
    end_column: int  # 1-based, characters, just past the span (SARIF's convention)
    cause: Cause | None = None  # the cause it shows; None: the diagnostic alone

    @property
    def whole(self) -> Cause:
        return self.cause if self.cause is not None else Cause(self.diagnostic, (self.diagnostic,))


def finding(path: str, d: Diagnostic, lines: list[str], cause: Cause | None = None) -> Finding:
    def chars(line: int, byte_col: int) -> int:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return byte_col_to_units(text, byte_col, UTF32) + 1

    end_line, end_col = (d.end_line, d.end_col) if (d.end_line, d.end_col) >= (d.line, d.col) else (d.line, d.col)
    return Finding(path.replace("\\", "/"), d, chars(d.line, d.col), end_line, max(chars(end_line, end_col), 1), cause)


def findings(path: str, diagnostics: Iterable[Diagnostic], lines: list[str]) -> list[Finding]:
    """A file's findings, one per cause, in line order."""
    causes = sorted(merge(diagnostics), key=lambda c: (c.diagnostic.line, c.diagnostic.col))
    return [finding(path, c.diagnostic, lines, c) for c in causes]

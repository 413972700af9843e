"""A diagnostic as CI formats need it: the file's path as the user named it, and columns counted in
characters (the report counts UTF-8 bytes; GitHub and SARIF count characters)."""
from __future__ import annotations

from dataclasses import dataclass

from fxlens.lsp.positions import UTF32, byte_col_to_units
from fxlens.report import Diagnostic


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the current directory, `/`-separated
    diagnostic: Diagnostic
    column: int  # 1-based, characters
    end_line: int
    end_column: int  # 1-based, characters, just past the span (SARIF's convention)


def finding(path: str, d: Diagnostic, lines: list[str]) -> Finding:
    def chars(line: int, byte_col: int) -> int:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return byte_col_to_units(text, byte_col, UTF32) + 1

    end_line, end_col = (d.end_line, d.end_col) if (d.end_line, d.end_col) >= (d.line, d.col) else (d.line, d.col)
    return Finding(path.replace("\\", "/"), d, chars(d.line, d.col), end_line, max(chars(end_line, end_col), 1))

"""The one place that converts between report coordinates and LSP positions.

Reports use Python's coordinates: 1-based lines and 0-based UTF-8 *byte* columns. LSP positions are
0-based lines and columns counted in the negotiated encoding's code units (UTF-16 unless the client
offered something else). Every other module hands coordinates through here untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fxlens.line_index import LineIndex

if TYPE_CHECKING:
    # imported where a position is built: the CLI and CI convert columns through this module and
    # should not pay lsprotocol's ~0.5 s import at start-up
    from lsprotocol import types

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(text: str, encoding: str) -> int:
    if encoding == UTF8:
        return len(text.encode("utf-8"))
    if encoding == UTF32:
        return len(text)
    # astral characters (most emoji) take two UTF-16 code units
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def byte_col_to_units(line_text: str, byte_col: int, encoding: str = UTF16) -> int:
    raw = line_text.encode("utf-8")
    byte_col = max(0, min(byte_col, len(raw)))
    if encoding == UTF8:
        return byte_col
    # a column inside a multi-byte character rounds down to that character's start
    return _units(raw[:byte_col].decode("utf-8", errors="ignore"), encoding)


def character_column(lines: Sequence[str], line: int, byte_col: int) -> int:
    """The 1-based character column of a byte column on 1-based line `line` (past the last line: an empty
    one): what a terminal, a CI annotation and an MCP client count."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return byte_col_to_units(text, byte_col, UTF32) + 1


def units_to_byte_col(line_text: str, units: int, encoding: str = UTF16) -> int:
    if encoding == UTF8:
        return max(0, min(units, len(line_text.encode("utf-8"))))
    seen = 0
    for index, ch in enumerate(line_text):
        width = 1 if encoding == UTF32 or ord(ch) <= 0xFFFF else 2
        if seen + width > units:
            return len(line_text[:index].encode("utf-8"))
        seen += width
    return len(line_text.encode("utf-8"))


def units_to_chars(line_text: str, units: int, encoding: str = UTF16) -> int:
    """The code point index of an LSP column in `line_text` (past the end: the line's end)."""
    if encoding == UTF32:
        return max(0, min(units, len(line_text)))
    if encoding == UTF8:
        return len(line_text.encode("utf-8")[: max(0, units)].decode("utf-8", errors="ignore"))
    seen = 0
    for index, ch in enumerate(line_text):
        seen += 1 if ord(ch) <= 0xFFFF else 2
        if seen > units:
            return index  # inside a surrogate pair rounds down to the character's start
    return len(line_text)


def normalise_encoding(encoding: str | None) -> str:
    value = getattr(encoding, "value", encoding)
    return value if value in (UTF8, UTF16, UTF32) else UTF16


class Ranges:
    """`lsp_range` from a converter's `lsp_position`: the same for a file and for a notebook cell."""

    def lsp_position(self, line: int, byte_col: int) -> types.Position:
        raise NotImplementedError

    def lsp_range(self, line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> types.Range:
        from lsprotocol import types

        end_line = line if end_line is None else end_line
        end_col = col if end_col is None else end_col
        return types.Range(start=self.lsp_position(line, col), end=self.lsp_position(end_line, end_col))


class Coords(Ranges):
    """Converters for one text under one encoding (`lsp_position`, `lsp_range`, `report_position`)."""

    def __init__(self, text: str, encoding: str | None = UTF16, lines: Sequence[str] | None = None) -> None:
        # `lines`: the text's lines when the caller keeps them (Document.lines, carried through edits);
        # else an index, which finds a line without splitting the text (5 MB: ~3 ms against ~20)
        self.lines = LineIndex(text) if lines is None else lines
        self.encoding = normalise_encoding(encoding)

    def _line_text(self, index: int) -> str:
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def lsp_position(self, line: int, byte_col: int) -> types.Position:
        from lsprotocol import types

        index = max(0, min(line - 1, len(self.lines) - 1))
        return types.Position(line=index, character=byte_col_to_units(self._line_text(index), byte_col, self.encoding))

    def line_end(self, line: int) -> types.Position:
        from lsprotocol import types

        index = max(0, min(line - 1, len(self.lines) - 1))
        text = self._line_text(index)
        return types.Position(line=index, character=_units(text, self.encoding))

    def report_position(self, position: types.Position) -> tuple[int, int]:
        """(1-based line, 0-based UTF-8 byte column) for an LSP position."""
        index = max(0, position.line)
        return index + 1, units_to_byte_col(self._line_text(index), position.character, self.encoding)

    def contains(self, line: int | None) -> bool:
        """Whether a report line belongs to the text these converters serve: a file holds them all;
        a notebook cell only its own (lsp/cells.py)."""
        return True

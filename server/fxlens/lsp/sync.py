"""Document sync in the editor's line model.

pygls applies incremental edits to lines cut with `str.splitlines()`: below a form feed, "\\x85" or
U+2028 its line numbers are off and an edit lands in the wrong place, so the server's text silently
stops being the editor's. Here an edit's range is resolved with `fxlens.lines`, like the editor does.
"""
from __future__ import annotations

from typing import Optional

from lsprotocol import types

from fxlens import lines
from fxlens.lsp.positions import normalise_encoding, units_to_chars


def offset_at(text: str, position: types.Position, encoding: Optional[str]) -> int:
    """The offset of an LSP position; a column past its line's end means the end (as the protocol
    says), a line past the last means the text's end."""
    return _in_line(text, lines.line_start(text, position.line), position.character, encoding)


def _in_line(text: str, start: Optional[int], character: int, encoding: Optional[str]) -> int:
    if start is None:
        return len(text)
    end = lines.line_end(text, start)
    return start + units_to_chars(text[start:end], character, normalise_encoding(encoding))


def apply_change(text: str, change: types.TextDocumentContentChangeEvent, encoding: Optional[str]) -> str:
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text  # a whole-document change
    first, last = change.range.start, change.range.end
    line_start = lines.line_start(text, first.line)  # finding a line costs a pass over the text before it
    start = _in_line(text, line_start, first.character, encoding)
    end = _in_line(text, line_start, last.character, encoding) if last.line == first.line else offset_at(text, last, encoding)
    start, end = min(start, end), max(start, end)
    return text[:start] + change.text + text[end:]

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


def offset_at(text: str, position: types.Position, encoding: Optional[str], start: Optional[int] = -1) -> int:
    """The offset of an LSP position; a column past its line's end means the end (as the protocol
    says), a line past the last means the text's end. `start`: the line's start, when known."""
    start = lines.line_start(text, position.line) if start == -1 else start
    if start is None:
        return len(text)
    end = lines.line_end(text, start)
    return start + units_to_chars(text[start:end], position.character, normalise_encoding(encoding))


def apply_change(text: str, change: types.TextDocumentContentChangeEvent, encoding: Optional[str]) -> str:
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text  # a whole-document change
    first, last = change.range.start, change.range.end
    line_start = lines.line_start(text, first.line)  # finding a line costs a pass over the text before it
    start = offset_at(text, first, encoding, line_start)
    end = offset_at(text, last, encoding, line_start if last.line == first.line else -1)
    start, end = min(start, end), max(start, end)
    return text[:start] + change.text + text[end:]

"""The one line model, the editor's (stdlib only: the server and the worker both use it).

LSP ends a line only at "\\n", "\\r\\n" and "\\r", and so does CPython's tokenizer: ast line numbers,
`co_positions()` and tracebacks count lines the same way (measured on 3.11: a form feed, "\\x85",
"\\x1c"-"\\x1e" or U+2028/2029, in a string, a comment or as whitespace, starts no line; a form feed
at the start of a line is byte column 0 and the code after it starts at column 1).
`str.splitlines()` also splits at "\\v", "\\f", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, so every
line number it gives below such a character is off: nothing computes lines or positions with it.
"""

from __future__ import annotations

import re

_BREAK = re.compile(r"\r\n|\r|\n")
_BREAK_KEPT = re.compile(f"({_BREAK.pattern})")


def split(text: str) -> list[str]:
    """The lines without their endings: n line breaks make n + 1 lines (the last is "" after a final
    break), so line k (1-based) is `split(text)[k - 1]`."""
    if "\r" in text:  # the common case stays one C-level split: 5 MB in ~8 ms
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def with_ends(text: str) -> list[str]:
    """The lines as reading the file in text mode gives them (each ending as "\\n", no empty last
    line): what `linecache` and `inspect.getsource` expect."""
    lines = split(text)
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def keeping_ends(text: str) -> list[str]:
    """The lines each with the ending it has in the text ("\\r\\n", "\\r" or "\\n"; none after the last):
    the lines `ast.get_source_segment` cuts a node's text from."""
    parts = _BREAK_KEPT.split(text)
    return [line + end for line, end in zip(parts[0::2], parts[1::2])] + ([parts[-1]] if parts[-1] else [])


def count(text: str) -> int:
    """The number of lines `split` gives."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + 1


def line_start(text: str, index: int) -> int | None:
    """Offset of the first character of 0-based line `index`; None past the last line."""
    if index <= 0:
        return 0
    # the remainder after `index` breaks is the text from the line's start on (C-level, no Python loop)
    parts = _BREAK.split(text, maxsplit=index) if "\r" in text else text.split("\n", index)
    if len(parts) <= index:
        return None
    return len(text) - len(parts[-1])


def line_end(text: str, start: int) -> int:
    """Offset of the line break (or the text's end) that ends the line starting at `start`."""
    found = _BREAK.search(text, start) if "\r" in text else None
    if found is not None:
        return found.start()
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline


def line_text(text: str, index: int) -> str:
    """The content of 0-based line `index` ("" past the end)."""
    start = line_start(text, index)
    return "" if start is None else text[start : line_end(text, start)]

"""The server's own parses of a buffer, only when they are cheap.

`ast.parse` holds the event loop (and the GIL, so a thread does not help) for its whole run, about
0.8 s per MB here: a 5 MB file blocked every request for 3 s after each edit. What the server parses
for is a shortcut (skip a trace when only lines moved, place a quick fix, check an importable
buffer); above the limit it does without, and the worker, which parses every text anyway, decides.
"""

from __future__ import annotations

import ast

from fxlens.outline import Outline, outline

# ~50 ms of parsing on this machine
PARSE_LIMIT_CHARS = 64_000


def cheap_parse(text: str) -> ast.Module | None:
    """The text's tree; None when it does not parse or is too big to parse on the event loop."""
    if len(text) > PARSE_LIMIT_CHARS:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def too_big_to_parse(text: str) -> bool:
    return len(text) > PARSE_LIMIT_CHARS


def cheap_outline(text: str) -> Outline | None:
    """The text's classes and module code; None when it does not parse cheaply."""
    tree = cheap_parse(text)
    return None if tree is None else outline(tree, text)

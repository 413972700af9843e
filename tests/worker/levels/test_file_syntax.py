"""The file's syntax read once per file (load/fingerprint.py's segments, cut from lines.keeping_ends;
levels/syntax.py): the same answers as ast's own functions, which split or parse the whole text again on
every call."""

from __future__ import annotations

import ast

from fxlens.worker.levels.syntax import FileSyntax
from fxlens.worker.load.fingerprint import _segments
from hypothesis import given, settings
from hypothesis import strategies as st

STATEMENTS = [
    "x = 1",
    "y = 'é😀'",
    "def f(a,\n      b):\n    return a + b",
    "class C:\n    z = (1 +\n         2)",
    "@f\n@g(1)\ndef h():\n    pass",
    "if x:\n    y += 1\nelse:\n    y -= 2",
    "s = '''a\nb'''",
    "w = [\n  1, 2]",
]
BREAKS = ["\n", "\r\n", "\r"]
files = st.lists(
    st.tuples(st.sampled_from(STATEMENTS), st.sampled_from(BREAKS), st.sampled_from(["", "\x0c"])),
    min_size=1,
    max_size=12,
).map(lambda parts: "".join(feed + statement.replace("\n", brk) + brk for statement, brk, feed in parts))


@settings(max_examples=200, deadline=None)
@given(files, st.booleans())
def test_a_segment_is_what_ast_cuts(text, without_last_break):
    text = text.rstrip("\r\n") if without_last_break else text
    segment = _segments(text)
    for node in ast.walk(ast.parse(text)):
        assert segment(node) == ast.get_source_segment(text, node), ast.dump(node)


def test_augmented_assignments_by_line_and_a_text_that_does_not_parse():
    syntax = FileSyntax(["def f(x):", "    x += 1", "    x = x * 2", "    x @= x; x //= 3", "    return x"])
    assert {line: [type(s.op).__name__ for s in found] for line, found in syntax.augmented.items()} == {
        2: ["Add"],
        4: ["MatMult", "FloorDiv"],
    }
    assert FileSyntax(["def f(:"]).augmented == {}

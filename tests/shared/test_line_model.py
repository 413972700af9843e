"""One line model, the editor's: lines end at \\n, \\r\\n and \\r only, whatever else the text holds.

The client side here is written out character by character, as an editor reads the protocol, so the
server's code is checked against it rather than against itself."""

from __future__ import annotations

import ast

from fxlens import lines
from fxlens.engine.shift import LineMap
from fxlens.line_index import LineIndex
from fxlens.lsp import sync
from fxlens.lsp.positions import UTF8, UTF16, UTF32, Coords
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

# what str.splitlines() splits at and the editor does not, the real line breaks, and text around them
AWKWARD = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
BREAKS = ["\n", "\r\n", "\r"]
PLAIN = ["a", "b", " ", "é", "€", "😀", "x = 1"]
pieces = st.lists(st.sampled_from(AWKWARD + BREAKS + PLAIN), max_size=40).map("".join)
encodings = st.sampled_from([UTF8, UTF16, UTF32])


class Editor:
    """The client's copy: positions are (line, column in the encoding's code units)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def line_starts(self) -> list[int]:
        starts, index = [0], 0
        while index < len(self.text):
            ch = self.text[index]
            if ch == "\r" and self.text[index + 1 : index + 2] == "\n":
                index += 1
            if ch in "\r\n":
                starts.append(index + 1)
            index += 1
        return starts

    def boundaries(self) -> list[int]:
        """Offsets a position can name: not between the \\r and \\n of one break."""
        return [
            i for i in range(len(self.text) + 1) if not (self.text[i - 1 : i] == "\r" and self.text[i : i + 1] == "\n")
        ]

    def position(self, offset: int, encoding: str) -> types.Position:
        starts = self.line_starts()
        line = max(k for k, start in enumerate(starts) if start <= offset)
        before = self.text[starts[line] : offset]
        units = {UTF8: len(before.encode("utf-8")), UTF32: len(before), UTF16: len(before.encode("utf-16-le")) // 2}[
            encoding
        ]
        return types.Position(line=line, character=units)

    def character_at(self, position: types.Position, encoding: str) -> str:
        start = self.line_starts()[position.line]
        units = 0
        for ch in self.text[start:]:
            if units == position.character:
                return ch
            units += {UTF8: len(ch.encode("utf-8")), UTF32: 1, UTF16: 2 if ord(ch) > 0xFFFF else 1}[encoding]
        return ""


def test_only_the_editors_breaks_end_lines():
    text = "a\x0cb\x85c\u2028d\x1ce\rf\r\ng\nh"
    assert lines.split(text) == ["a\x0cb\x85c\u2028d\x1ce", "f", "g", "h"]
    assert lines.count(text) == 4 and lines.split("") == [""] and lines.split("x\n") == ["x", ""]
    assert lines.with_ends("a\rb\r\nc\x0cd\n") == ["a\n", "b\n", "c\x0cd\n"]
    assert lines.keeping_ends("a\rb\r\nc\x0cd\n") == ["a\r", "b\r\n", "c\x0cd\n"]
    assert lines.keeping_ends("a\nb") == ["a\n", "b"] and lines.keeping_ends("") == []
    assert [lines.line_start(text, k) for k in range(5)] == [0, 10, 13, 15, None]
    assert lines.line_text(text, 1) == "f" and lines.line_text(text, 9) == ""


@settings(max_examples=300, deadline=None)
@given(
    pieces, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), pieces), min_size=1, max_size=6), encodings
)
def test_after_any_incremental_edits_the_servers_text_is_the_editors(text, edits, encoding):
    editor = Editor(text)
    server = text
    index = LineIndex(text, 4)  # what the server keeps through the edits (small blocks: many of them)
    for first, second, new_text in edits:
        spots = editor.boundaries()
        start, end = sorted((spots[first % len(spots)], spots[second % len(spots)]))
        change = types.TextDocumentContentChangePartial(
            range=types.Range(editor.position(start, encoding), editor.position(end, encoding)), text=new_text
        )
        editor.text = editor.text[:start] + new_text + editor.text[end:]
        server = sync.apply(LineIndex(server), change, encoding).text  # a text with no index kept
        index = sync.apply(index, change, encoding)
        assert server == editor.text and index.text == editor.text
        assert list(index) == lines.split(editor.text)


def test_a_column_past_the_line_end_means_the_end_and_a_line_past_the_text_its_end():
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 99), types.Position(0, 99)), text="!"
    )
    assert sync.apply(LineIndex("ab\x0ccd\ref"), change, UTF16).text == "ab\x0ccd!\ref"
    change.range = types.Range(types.Position(7, 0), types.Position(7, 0))
    assert sync.apply(LineIndex("ab\ref"), change, UTF16).text == "ab\ref!"


# Python source in which every awkward character sits where Python allows it (strings, comments,
# a form feed before a statement), with any mix of line endings
statement = st.tuples(
    st.sampled_from(["", "\x0c"]),  # a form feed opening the line
    st.sampled_from(["alpha", "beta", "gamma", "é_name", "z"]),
    st.lists(st.sampled_from(AWKWARD[:1] + AWKWARD[2:] + PLAIN[:6]), max_size=6).map("".join),
    st.sampled_from(BREAKS),
    st.booleans(),
).map(lambda p: f"{p[0]}{p[1]} = {p[2]!r} + 1  # {p[2]}{p[3]}" if p[4] else f"# {p[2]}{p[3]}")


@settings(max_examples=200, deadline=None)
@given(st.lists(statement, min_size=1, max_size=12).map("".join), encodings)
def test_spans_python_gives_point_at_the_same_characters_in_the_editor(source, encoding):
    coords = Coords(source, encoding)
    editor = Editor(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            start = coords.lsp_position(node.lineno, node.col_offset)
            assert editor.character_at(start, encoding) == node.id[0]
            end = coords.lsp_position(node.end_lineno, node.end_col_offset)
            assert editor.character_at(end, encoding) == " "
            assert coords.report_position(start) == (node.lineno, node.col_offset)


def test_a_one_character_edit_in_ten_thousand_identical_lines_keeps_every_other_line():
    old = "        x = x + 1\n" * 10_000
    new = old[: 18 * 5000] + "        x = x + 2\n" + old[18 * 5001 :]
    lines_map = LineMap(old, new)
    assert lines_map.line(5001) is None
    assert all(lines_map.line(n) == n for n in (1, 2, 5000, 5002, 9999, 10_000))


def test_lines_inserted_far_apart_in_repeated_lines_move_what_follows():
    body = ["        x = x + 1"] * 3000
    old = "\n".join(["class A:", *body, "class B:", *body, "class C:"])
    new = "\n".join(["# new", "class A:", *body, "class B:", "# new", *body, "class C:"])
    lines_map = LineMap(old, new)
    assert lines_map.line(1) == 2 and lines_map.line(3002) == 3003 and lines_map.line(6003) == 6005
    # whatever it maps, it maps to the same text, in order
    old_lines, new_lines = lines.split(old), lines.split(new)
    mapped = [(n, lines_map.line(n)) for n in range(1, len(old_lines) + 1) if lines_map.line(n) is not None]
    assert all(old_lines[a - 1] == new_lines[b - 1] for a, b in mapped)
    assert [b for _, b in mapped] == sorted(b for _, b in mapped)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "x = 1", "", "\x0cd", "e\u2028f"]), max_size=60),
    st.lists(st.sampled_from(["a", "b", "c", "x = 1", "", "\x0cd", "e\u2028f"]), max_size=60),
    st.sampled_from(BREAKS),
)
def test_the_line_map_only_maps_a_line_to_the_same_text_in_order(old, new, newline):
    old, new = old or [""], new or [""]  # an empty text is one empty line
    lines_map = LineMap(newline.join(old), newline.join(new))
    mapped = [(n, lines_map.line(n)) for n in range(1, len(old) + 1) if lines_map.line(n) is not None]
    assert all(old[a - 1] == new[b - 1] for a, b in mapped)
    assert [b for _, b in mapped] == sorted({b for _, b in mapped})


@settings(max_examples=400, deadline=None)
@given(pieces, pieces, st.integers(0, 10**6), st.integers(0, 10**6))
def test_one_edit_keeps_every_line_it_did_not_touch_and_maps_only_equal_lines(text, new_text, first, second):
    start, end = sorted((first % (len(text) + 1), second % (len(text) + 1)))
    edited = text[:start] + new_text + text[end:]
    lines_map = LineMap(text, edited)
    old, new = lines.split(text), lines.split(edited)
    mapped = [(n, lines_map.line(n)) for n in range(1, len(old) + 1) if lines_map.line(n) is not None]
    assert all(old[a - 1] == new[b - 1] for a, b in mapped)
    assert [b for _, b in mapped] == sorted({b for _, b in mapped})
    # the lines wholly before the edit (and its line break's \r, which an inserted \n may join) and
    # those wholly after it all survive (where a run of equal lines goes is the diff's choice)
    before = lines.count(text[: max(0, start - 1)]) - 1
    after = lines.count(text[min(len(text), end + 1) :]) - 1
    untouched = [*range(1, before + 1), *range(len(old) - after + 1, len(old) + 1)]
    # as many lines survive; a line whose text is its own survives itself (of equal lines beside the edit,
    # which one the edit took is the diff's choice: deleting one of three empty lines keeps two)
    assert len(mapped) >= len(set(untouched))
    assert all(lines_map.line(n) is not None for n in untouched if old.count(old[n - 1]) == 1)

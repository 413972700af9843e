"""The line index the server keeps through edits: after any edits it is what splitting the text afresh
gives, and the line edit it reports keeps every line it says it kept."""

from __future__ import annotations

from fxlens import lines
from fxlens.engine.documents import Document, Traced
from fxlens.line_index import LineIndex
from fxlens.report import Diagnostic, FileReport
from hypothesis import given, settings
from hypothesis import strategies as st

AWKWARD = ["\x0c", "\x0b", "\x1c", "\x85", "\u2028"]
BREAKS = ["\n", "\r\n", "\r"]
PLAIN = ["a", "bb", " ", "é", "😀", "x = 1"]
pieces = st.lists(st.sampled_from(AWKWARD + BREAKS + PLAIN), max_size=60).map("".join)
edits = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), pieces), min_size=1, max_size=8)
# blocks of a few characters, so that edits cross, merge and split blocks as 16 K ones do in big files
chunks = st.sampled_from([1, 3, 8, 64])


def fresh_starts(text: str) -> list[int]:
    return [lines.line_start(text, k) for k in range(lines.count(text))]


@settings(max_examples=400, deadline=None)
@given(pieces, edits, chunks)
def test_after_any_edits_the_index_is_a_fresh_split_of_the_text(text, changes, chunk):
    index = LineIndex(text, chunk)
    for first, second, inserted in changes:
        start, end = sorted((first % (len(text) + 1), second % (len(text) + 1)))
        old_lines = lines.split(text)
        text = text[:start] + inserted + text[end:]
        edit = index.edit(start, end, text)
        new_lines = lines.split(text)
        assert list(index) == new_lines and len(index) == len(new_lines)
        assert [index.start(k) for k in range(len(index))] == fresh_starts(text)
        assert index.start(len(index)) is None
        # lines above the edit keep their number, lines below move by its shift, both with their text
        assert len(new_lines) - len(old_lines) == edit.shift
        assert new_lines[: edit.first] == old_lines[: edit.first]
        assert new_lines[edit.last + 1 + edit.shift :] == old_lines[edit.last + 1 :]


@settings(max_examples=200, deadline=None)
@given(pieces, chunks)
def test_every_offset_is_on_the_line_that_holds_it(text, chunk):
    index = LineIndex(text, chunk)
    starts = fresh_starts(text)
    for offset in range(len(text) + 1):
        line = index.line_of(offset)
        assert starts[line] <= offset and (line + 1 == len(starts) or offset < starts[line + 1])
        assert index.content_end(line) == starts[line] + len(lines.split(text)[line])


def test_an_edit_that_adds_or_removes_whole_lines_touches_no_other_line():
    text = "a\nb\nc\n"
    index = LineIndex(text)
    inserted = "a\nnew\nb\nc\n"
    assert index.edit(2, 2, inserted) == (1, 0, 1)  # "new\n" before line 1: nothing replaced, all below move
    assert index.edit(2, 6, text) == (1, 1, 0)  # and removed again
    assert index.edit(1, 2, "a\rb\nc\n") == (0, 0, 1)  # a line's break changed: that line only


def test_a_return_followed_by_an_inserted_newline_becomes_one_break():
    index = LineIndex("a\rb")
    edit = index.edit(2, 2, "a\r\nb")
    assert list(index) == ["a", "b"] and edit.shift == 0
    index.edit(2, 3, "a\rb")  # and splitting it again
    assert list(index) == ["a", "b"] and index.start(1) == 2


# a buffer traced once, then edited many times before the next trace: each report line is carried
# through the edits one by one (no diff of whole texts), and must land where the editor moved it
line_texts = st.sampled_from(["a", "b", "x = 1", "", "\x0cd", "e\u2028f", "        y = y + 1"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(line_texts, min_size=1, max_size=30),
    st.sampled_from(BREAKS),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), pieces), min_size=1, max_size=6),
)
def test_a_report_carried_through_edits_stays_on_the_lines_the_editor_moved(texts, newline, changes):
    text = newline.join(texts)
    traced = lines.split(text)
    doc = Document("file:///m.py", "/m.py", 1, text)
    marks = [Diagnostic(k, 0, k, 0, "hint", "mark", str(k)) for k in range(1, len(traced) + 1)]
    doc.finish(Traced(1, text, FileReport("/m.py", diagnostics=marks)))
    origin: list = list(range(1, len(traced) + 1))  # for each current line, the traced line it is (or None)
    for version, (first, second, inserted) in enumerate(changes, start=2):
        start, end = sorted((first % (len(text) + 1), second % (len(text) + 1)))
        edited = text[:start] + inserted + text[end:]
        # wholly before the edit (and the \r an inserted \n may join) or wholly after it: untouched
        before = lines.count(text[: max(0, start - 1)]) - 1
        after = lines.count(text[min(len(text), end + 1) :]) - 1
        middle = lines.count(edited) - before - after
        origin = origin[:before] + [None] * middle + (origin[len(origin) - after :] if after else [])
        doc.edit(version, edited)
        text = edited
        current = lines.split(text)
        assert list(doc.lines) == current
        shown = {d.line: int(d.message) for d in doc.view().report.diagnostics}
        assert all(current[line - 1] == traced[mark - 1] for line, mark in shown.items())
        assert sorted(shown.values()) == [shown[line] for line in sorted(shown)]  # in order
        # every line no edit touched keeps a result (which of equal lines went is the texts' choice)
        assert all(line in shown for line, mark in enumerate(origin, start=1) if mark is not None)

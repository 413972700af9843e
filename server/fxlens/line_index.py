"""Where each line of a text starts, kept up to date through edits (stdlib only, like fxlens.lines).

Splitting a 5 MB text costs ~20 ms and finding a line by splitting up to it ~10 ms: too much for
every edit and every hover. Here the text is cut into blocks of ~16 K characters, each ending at a
line start, with its offset, its first line number and (once asked for) its lines' starts. Building
the blocks is a C-level count per block (~3 ms for 5 MB); an edit recounts only the blocks it touched
and moves the later ones by the edit's character and line deltas, one step per block.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from typing import NamedTuple, overload

_BREAK = re.compile(r"\r\n|\r|\n")
_SPLIT_KEEPING_BREAKS = re.compile(r"(\r\n|\r|\n)")

# characters per block: an edit recounts ~2 blocks (~20 µs) and shifts every later block (~0.1 µs each)
CHUNK = 16_384


def line_starts(text: str) -> list[int]:
    """The offset of every line's first character, in the one line model (`fxlens.lines`)."""
    if "\r" not in text:
        starts = [0, *accumulate(map(operator.add, map(len, text.split("\n")), repeat(1)))]
        starts.pop()  # the start "after" the last line
        return starts
    # [line, break, line, break, ..., line]: a line starts where each break ends
    return [0, *list(accumulate(map(len, _SPLIT_KEEPING_BREAKS.split(text))))[1::2]]


def breaks(text: str, start: int = 0, end: int | None = None, returns_possible: bool = True) -> int:
    """The number of line breaks in text[start:end] (a "\\r\\n" is one); `returns_possible`
    False says the caller knows the text holds no "\\r" (one count instead of three)."""
    end = len(text) if end is None else end
    newlines = text.count("\n", start, end)
    returns = text.count("\r", start, end) if returns_possible else 0
    return newlines + returns - (text.count("\r\n", start, end) if returns else 0)


def _break_ends_at(text: str, offset: int) -> bool:
    """Whether a line break ends at `offset` of `text` (so a line starts there)."""
    if offset <= 0:
        return offset == 0
    before = text[offset - 1]
    return before == "\n" or (before == "\r" and not text.startswith("\n", offset))


class LineEdit(NamedTuple):
    """Old lines `first`..`last` (0-based, inclusive; none when last < first) became `new_count` lines:
    every line above keeps its number, every line below moves by `shift`."""

    first: int
    last: int
    new_count: int

    @property
    def shift(self) -> int:
        return self.new_count - (self.last - self.first + 1)


class LineIndex(Sequence[str]):
    """The lines of `text`: a sequence of their contents without line endings, like
    `fxlens.lines.split`, and where each starts; `edit` carries it to the text after an edit."""

    def __init__(self, text: str, chunk: int = CHUNK) -> None:
        self.text = text
        self._chunk = chunk
        self._returns = "\r" in text  # whether the text may hold a "\r" (kept True once it might)
        self._bases: list[int] = []  # each block's first offset (a line start)
        self._firsts: list[int] = []  # each block's first line (0-based)
        self._starts: list[list[int] | None] = []  # each block's line starts, relative, once asked for
        self._lines = self._cut(0, len(text), 0, at_end=True)

    # -- reading -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._lines

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.text[self.start(index) : self.content_end(index)]

    def __iter__(self) -> Iterator[str]:
        return (self[k] for k in range(len(self)))

    def start(self, line: int) -> int | None:
        """Offset of 0-based `line`'s first character (0 before the first); None past the last line."""
        if line <= 0:
            return 0
        if line >= self._lines:
            return None
        block = bisect.bisect_right(self._firsts, line) - 1
        return self._bases[block] + self._block_starts(block)[line - self._firsts[block]]

    def content_end(self, line: int) -> int:
        """Offset of the line break (or the text's end) that ends 0-based `line`."""
        following = self.start(line + 1)
        if following is None:
            return len(self.text)
        if following - 2 >= (self.start(line) or 0) and self.text.startswith("\r\n", following - 2):
            return following - 2
        return following - 1

    def line_of(self, offset: int) -> int:
        """The 0-based line holding `offset` (a line's break counts as its own; the text's end, or
        beyond, as the last line's)."""
        block = max(0, bisect.bisect_right(self._bases, offset) - 1)
        within = bisect.bisect_right(self._block_starts(block), offset - self._bases[block]) - 1
        return self._firsts[block] + max(0, within)

    # -- editing -----------------------------------------------------------------------------------

    def edited_lines(self, start: int, end: int, new_text: str) -> tuple[int, int]:
        """The first and last line (0-based; last < first for none) that replacing [start, end) of
        the text, giving `new_text`, changes: every line above keeps its text and number, every
        line below its text."""
        first, last = self.line_of(start), self.line_of(end)
        if end == self.start(last) and _break_ends_at(new_text, end + len(new_text) - len(self.text)):
            last -= 1  # the edit ends at a line start that stays one: that line is untouched
        return first, last

    def edit(self, start: int, end: int, new_text: str) -> LineEdit:
        """Carry the index to `new_text`, the old text with [start, end) replaced; which lines changed."""
        delta = len(new_text) - len(self.text)
        first, last = self.edited_lines(start, end, new_text)
        # the blocks to recount: from one that starts before the edit (a "\r" before it may join a
        # "\n" it inserts) to the one holding its end, and a short one after that joins them
        head = bisect.bisect_right(self._bases, start) - 1
        if head > 0 and self._bases[head] == start:
            head -= 1
        tail = bisect.bisect_right(self._bases, end) - 1
        while tail + 1 < len(self._bases) and self._block_end(tail) + delta - self._bases[head] < self._chunk:
            tail += 1
        at_end = tail + 1 == len(self._bases)
        old_lines = (self._lines if at_end else self._firsts[tail + 1]) - self._firsts[head]
        region_end = self._block_end(tail) + delta
        later = slice(tail + 1, None)
        bases, firsts, starts = self._bases[later], self._firsts[later], self._starts[later]
        line, region_start = self._firsts[head], self._bases[head]
        del self._bases[head:], self._firsts[head:], self._starts[head:]
        self.text = new_text
        self._returns = self._returns or "\r" in new_text[start : end + delta]
        new_lines = self._cut(region_start, region_end, line, at_end)
        line_shift = new_lines - old_lines
        self._bases += [base + delta for base in bases]
        self._firsts += [number + line_shift for number in firsts]
        self._starts += starts
        self._lines += line_shift
        return LineEdit(first, last, last - first + 1 + line_shift)

    def _block_end(self, block: int) -> int:
        return self._bases[block + 1] if block + 1 < len(self._bases) else len(self.text)

    def _block_starts(self, block: int) -> list[int]:
        starts = self._starts[block]
        if starts is None:
            last = block + 1 == len(self._bases)
            starts = line_starts(self.text[self._bases[block] : self._block_end(block)])
            if not last:
                starts.pop()  # the block ends with a line break: the line after it is the next block's
            self._starts[block] = starts
        return starts

    def _cut(self, begin: int, end: int, line: int, at_end: bool) -> int:
        """Append blocks for text[begin:end] (both line starts, or `end` the text's end when
        `at_end`), its first line being 0-based `line`; returns how many lines they hold."""
        text, total = self.text, 0
        while True:
            cut = end
            if end - begin > self._chunk:
                found = _BREAK.search(text, begin + self._chunk, end)
                if found is not None and found.end() < end:
                    cut = found.end()
            count = breaks(text, begin, cut, self._returns) + (1 if at_end and cut == end else 0)
            self._bases.append(begin)
            self._firsts.append(line + total)
            self._starts.append(None)
            total += count
            if cut == end:
                return total
            begin = cut

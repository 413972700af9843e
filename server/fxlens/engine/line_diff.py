"""Which lines of an old text survive, unchanged, in a new one: in time linear in the texts' size.

difflib alone is quadratic or worse on repeated lines (10,000 identical lines and a one-character
edit blocked the event loop for 33 s). Here the common head and tail are matched first (an edit
leaves everything around it alone), then lines that occur exactly once on both sides anchor the
rest (patience diff); difflib only settles what remains between two anchors when that is small.
A stretch that is neither small nor anchored stays unmatched: its results are withheld until the
next trace, which is what the shift does for any edited line.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from fxlens import lines
from fxlens.line_index import LineIndex, breaks

# difflib's cost grows with the product of the stretch's sides (and worse on repeats): 200 x 200
# repeated lines take ~10 ms
SMALL = 40_000


class Block(NamedTuple):
    old: int  # 0-based first line in the old text
    new: int  # 0-based first line in the new text
    size: int


def matching_blocks(old: Sequence[str], new: Sequence[str]) -> list[Block]:
    """Runs of equal lines, in order on both sides and disjoint, sorted by `old`."""
    blocks: list[Block] = []
    # anchors are looked for once, in the whole stretch: looking again inside each gap could cost
    # the stretch's size once per anchor
    pending = [(0, len(old), 0, len(new), True)]
    while pending:
        a, a_end, b, b_end, may_anchor = pending.pop()
        head = _common_head(old, new, a, a_end, b, b_end)
        if head:
            blocks.append(Block(a, b, head))
            a, b = a + head, b + head
        tail = _common_tail(old, new, a, a_end, b, b_end)
        if tail:
            blocks.append(Block(a_end - tail, b_end - tail, tail))
            a_end, b_end = a_end - tail, b_end - tail
        if a == a_end or b == b_end:
            continue
        if (a_end - a) * (b_end - b) <= SMALL:
            matcher = difflib.SequenceMatcher(None, old[a:a_end], new[b:b_end], autojunk=False)
            blocks.extend(Block(a + m.a, b + m.b, m.size) for m in matcher.get_matching_blocks() if m.size)
            continue
        if not may_anchor:
            continue
        anchors = _unique_anchors(old, new, a, a_end, b, b_end)
        # the stretches between consecutive anchors are matched the same way
        previous = (a - 1, b - 1)
        for anchor in [*anchors, (a_end, b_end)]:
            if anchor[0] > previous[0] + 1 or anchor[1] > previous[1] + 1:
                pending.append((previous[0] + 1, anchor[0], previous[1] + 1, anchor[1], False))
            if anchor != (a_end, b_end):
                blocks.append(Block(anchor[0], anchor[1], 1))
            previous = anchor
    return sorted(blocks)


def _common_head(old: Sequence[str], new: Sequence[str], a: int, a_end: int, b: int, b_end: int) -> int:
    size = 0
    limit = min(a_end - a, b_end - b)
    while size < limit and old[a + size] == new[b + size]:
        size += 1
    return size


def _common_tail(old: Sequence[str], new: Sequence[str], a: int, a_end: int, b: int, b_end: int) -> int:
    size = 0
    limit = min(a_end - a, b_end - b)
    while size < limit and old[a_end - 1 - size] == new[b_end - 1 - size]:
        size += 1
    return size


def _unique_anchors(
    old: Sequence[str], new: Sequence[str], a: int, a_end: int, b: int, b_end: int
) -> list[tuple[int, int]]:
    """Pairs (old line, new line) of lines that occur once on each side, the longest run of them
    that is in order on both sides."""
    in_old = Counter(old[a:a_end])
    in_new = Counter(new[b:b_end])
    where_new = {line: b + k for k, line in enumerate(new[b:b_end]) if in_new[line] == 1 and in_old[line] == 1}
    pairs = [(a + k, where_new[line]) for k, line in enumerate(old[a:a_end]) if line in where_new]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by old line) whose new lines increase."""
    tails: list[int] = []  # tails[k]: the new line ending the best run of length k + 1
    ends: list[int] = []  # the index in `pairs` of that run's last pair
    before: list[int] = [-1] * len(pairs)
    for index, (_, new_line) in enumerate(pairs):
        k = bisect.bisect_left(tails, new_line)
        if k == len(tails):
            tails.append(new_line)
            ends.append(index)
        else:
            tails[k], ends[k] = new_line, index
        before[index] = ends[k - 1] if k else -1
    run = []
    index = ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    return run[::-1]


def text_blocks(old_text: str, new_text: str) -> list[Block]:
    """`matching_blocks` of the two texts' lines (`fxlens.lines`), without splitting what the texts
    share at their start and end: an edit in a 5 MB file compares ~5 MB in C, and splits a few lines."""
    prefix = common_prefix(old_text, new_text)
    suffix = common_suffix(old_text, new_text, min(len(old_text), len(new_text)) - prefix)
    cut = _line_start_before(old_text, prefix)
    head = _breaks(old_text, 0, cut)
    old_end = _line_start_after(old_text, len(old_text) - suffix)
    new_end = None if old_end is None else old_end - len(old_text) + len(new_text)
    old_middle = lines.split(old_text[cut : old_end if old_end is not None else len(old_text)])
    new_middle = lines.split(new_text[cut : new_end if new_end is not None else len(new_text)])
    blocks = [Block(0, 0, head)] if head else []
    if old_end is not None:  # both middles end with a line break: the "" after it is no line
        old_middle.pop()
        new_middle.pop()
    blocks += [Block(head + b.old, head + b.new, b.size) for b in matching_blocks(old_middle, new_middle)]
    if old_end is not None:
        tail = _breaks(old_text, old_end, len(old_text)) + 1
        blocks.append(Block(head + len(old_middle), head + len(new_middle), tail))
    return blocks


def edit_blocks(index: LineIndex, new_text: str) -> list[Block]:
    """`text_blocks` of the index's text and `new_text`, carrying the index to `new_text` on the way.
    The index knows every line's number, so nothing is counted or split but the edited lines: for a
    one-character edit of a 5 MB file, a compare of the texts in C (~1 ms) and a few lines."""
    old_count = len(index)
    start, end = changed_span(index.text, new_text)
    first, last = index.edited_lines(start, end, new_text)
    old_middle = _lines_between(index, first, last)
    shift = index.edit(start, end, new_text).shift
    new_middle = _lines_between(index, first, last + shift)
    blocks = [Block(0, 0, first)] if first else []
    blocks += [Block(first + b.old, first + b.new, b.size) for b in matching_blocks(old_middle, new_middle)]
    if last + 1 < old_count:
        blocks.append(Block(last + 1, last + 1 + shift, old_count - last - 1))
    return blocks


def changed_span(old_text: str, new_text: str) -> tuple[int, int]:
    """[start, end) of `old_text` that `new_text` replaced: all but their common head and tail."""
    prefix = common_prefix(old_text, new_text)
    suffix = common_suffix(old_text, new_text, min(len(old_text), len(new_text)) - prefix)
    return prefix, len(old_text) - suffix


def _lines_between(index: LineIndex, first: int, last: int) -> list[str]:
    if last < first:
        return []
    return lines.split(index.text[index.start(first) : index.content_end(last)])


def compose(earlier: list[Block], later: list[Block]) -> list[Block]:
    """The blocks from the first text to the third, given those from the first to the second and
    from the second to the third (each sorted, as `matching_blocks` gives them)."""
    out: list[Block] = []
    at = 0
    for block in earlier:
        low, high = block.new, block.new + block.size
        while at < len(later) and later[at].old + later[at].size <= low:
            at += 1
        for step in later[at:]:
            if step.old >= high:
                break
            begin, end = max(low, step.old), min(high, step.old + step.size)
            old, new = block.old + begin - block.new, step.new + begin - step.old
            if out and out[-1].old + out[-1].size == old and out[-1].new + out[-1].size == new:
                out[-1] = Block(out[-1].old, out[-1].new, out[-1].size + end - begin)
            else:
                out.append(Block(old, new, end - begin))
    return out


_CHUNK = 4096


def common_prefix(a: str, b: str) -> int:
    limit, at = min(len(a), len(b)), 0
    while at + _CHUNK <= limit and a[at : at + _CHUNK] == b[at : at + _CHUNK]:
        at += _CHUNK
    while at < limit and a[at] == b[at]:
        at += 1
    return at


def common_suffix(a: str, b: str, limit: int) -> int:
    size = 0
    while (
        size + _CHUNK <= limit
        and a[len(a) - size - _CHUNK : len(a) - size] == b[len(b) - size - _CHUNK : len(b) - size]
    ):
        size += _CHUNK
    while size < limit and a[len(a) - size - 1] == b[len(b) - size - 1]:
        size += 1
    return size


def _breaks(text: str, start: int, end: int) -> int:
    # one count where the text holds no "\r" (most files): a 5 MB text costs ~2.5 ms a count
    return breaks(text, start, end, "\r" in text)


def _last_break(text: str, end: int) -> int:
    """Index of the last line-break character before `end` (a \\r\\n counts at its \\r), -1 if none."""
    at = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end))
    if at > 0 and text[at] == "\n" and text[at - 1] == "\r":
        at -= 1
    return at


def _line_start_before(text: str, end: int) -> int:
    """A line start at or before `end` with a whole line between it and `end`: the lines before it
    lie in the shared prefix, whatever the break at `end` turns out to be in the other text."""
    last = _last_break(text, end)
    if last < 0:
        return 0
    previous = _last_break(text, last)
    if previous < 0:
        return 0
    return previous + (2 if text.startswith("\r\n", previous) else 1)


def _next_break_end(text: str, start: int) -> int | None:
    found = [at for at in (text.find("\n", start), text.find("\r", start)) if at >= 0]
    if not found:
        return None
    at = min(found)
    return at + (2 if text.startswith("\r\n", at) else 1)


def _line_start_after(text: str, start: int) -> int | None:
    """The start of a line after `start`, with a whole line break between: from it on, every line
    lies in the shared suffix. None when there is none."""
    first = _next_break_end(text, start)
    return None if first is None else _next_break_end(text, first)

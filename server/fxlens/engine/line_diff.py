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
from typing import NamedTuple, Sequence

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


def _common_head(old, new, a, a_end, b, b_end) -> int:
    size = 0
    limit = min(a_end - a, b_end - b)
    while size < limit and old[a + size] == new[b + size]:
        size += 1
    return size


def _common_tail(old, new, a, a_end, b, b_end) -> int:
    size = 0
    limit = min(a_end - a, b_end - b)
    while size < limit and old[a_end - 1 - size] == new[b_end - 1 - size]:
        size += 1
    return size


def _unique_anchors(old, new, a, a_end, b, b_end) -> list[tuple[int, int]]:
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

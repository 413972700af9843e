"""Carry an old report through edits: keep what sits on unchanged lines, withhold the rest.

Only whole lines move: a line whose text is unchanged keeps its byte columns, so a node on it is
still exactly right at its new line number. Anything touching an edited line loses its position
(nodes) or is dropped (diagnostics, classes whose `class` line changed) until the next trace.
"""

from __future__ import annotations

import bisect
import copy
from dataclasses import replace

from fxlens.engine.line_diff import Block, compose, text_blocks
from fxlens.fix_report import Fix
from fxlens.report import ClassReport, Diagnostic, FileReport, Node


class LineMapping:
    """Old line -> new line, for the lines that survived (1-based); subclasses say how (`line`)."""

    identity = False

    def line(self, line: int | None) -> int | None:
        raise NotImplementedError

    def span(self, line: int | None, end_line: int | None) -> tuple[int, int] | None:
        """New (line, end_line) if every line of the span survived, unsplit; else None."""
        if line is None:
            return None
        end_line = line if end_line is None else end_line
        mapped = [self.line(n) for n in range(line, end_line + 1)]
        survived = [m for m in mapped if m is not None]
        if len(survived) < len(mapped) or survived[-1] - survived[0] != end_line - line:
            return None
        return survived[0], survived[-1]

    def nearest_before(self, line: int) -> int | None:
        """Where the last surviving line at or above `line` went."""
        return next((m for m in map(self.line, range(line, 0, -1)) if m is not None), None)


class BlockMap(LineMapping):
    """By runs of lines that survived unchanged (`line_diff.Block`, sorted)."""

    def __init__(self, blocks: list[Block], identity: bool = False) -> None:
        self.identity = identity
        self._blocks = blocks
        self._starts = [block.old for block in blocks]

    def then(self, blocks: list[Block]) -> BlockMap:
        """This map followed by one more edit's (its blocks from this map's new text on)."""
        return BlockMap(blocks if self.identity else compose(self._blocks, blocks))

    def line(self, line: int | None) -> int | None:
        if line is None or self.identity:
            return line
        index = bisect.bisect_right(self._starts, line - 1) - 1
        if index < 0:
            return None
        block = self._blocks[index]
        offset = line - 1 - block.old
        return block.new + offset + 1 if offset < block.size else None

    def nearest_before(self, line: int) -> int | None:
        # by block, not line by line: a 10,000-line class would otherwise cost a scan per edit
        if self.identity:
            return line
        index = bisect.bisect_right(self._starts, line - 1) - 1
        if index < 0:
            return None
        block = self._blocks[index]
        return block.new + min(line - 1 - block.old, block.size - 1) + 1


class LineMap(BlockMap):
    """Between two texts: the lines whose text survived the edit."""

    def __init__(self, old_text: str, new_text: str) -> None:
        identity = old_text == new_text
        super().__init__([] if identity else text_blocks(old_text, new_text), identity)


def _moved(d: Diagnostic, span: tuple[int, int]) -> Diagnostic:
    d = copy.copy(d)
    d.line, d.end_line = span
    return d


def _shift_node(node: Node, lines: LineMapping) -> Node:
    if node.line is None:
        return node
    span = lines.span(node.line, node.end_line)
    if span == (node.line, node.end_line if node.end_line is not None else node.line):
        return node  # its lines did not move: the same object serves both texts
    node = copy.copy(node)
    if span is None:
        node.line = node.col = node.end_line = node.end_col = None
    else:
        node.line, node.end_line = span
    return node


def shift_class(report: ClassReport, lines: LineMapping) -> ClassReport | None:
    """The class with its positions carried to the new text. Reports are never mutated once built, so
    what did not move is shared, not copied: a deep copy of a 12-layer GPT took ~30 ms, a hover's
    worth of event-loop time, on every edit."""
    if lines.identity:
        return report
    start = lines.line(report.line)
    if start is None:
        return None
    moved = copy.copy(report)
    moved.line = start
    moved.end_line = max(start, lines.nearest_before(report.end_line) or start)
    moved.members = [replace(m, line=lines.line(m.line)) for m in report.members]
    moved.levels = {}
    for level, result in report.levels.items():
        moved.levels[level] = replace(
            result,
            nodes=[_shift_node(n, lines) for n in result.nodes],
            diagnostics=[_moved(d, s) for d in result.diagnostics if (s := lines.span(d.line, d.end_line)) is not None],
        )
    moved.fixes = [f for f in (_moved_fix(fix, lines) for fix in report.fixes) if f is not None]
    return moved


def _moved_fix(fix: Fix, lines: LineMapping) -> Fix | None:
    """The fix at its lines in the new text; None when a line it edits was edited itself."""
    span = lines.span(fix.line, fix.end_line)
    edits = []
    for edit in fix.edits:
        moved = lines.span(edit.line, edit.end_line)
        if moved is None:
            return None
        edits.append(replace(edit, line=moved[0], end_line=moved[1]))
    if span is None:
        return None
    return replace(fix, line=span[0], end_line=span[1], edits=edits)


def shift_diagnostics(items: list[Diagnostic], lines: LineMapping) -> list[Diagnostic]:
    if lines.identity:
        return list(items)
    return [_moved(d, s) for d in items if (s := lines.span(d.line, d.end_line)) is not None]


def shift_report(report: FileReport, lines: LineMapping) -> FileReport:
    if lines.identity:
        return report
    moved = copy.copy(report)
    moved.classes = [c for c in (shift_class(c, lines) for c in report.classes) if c is not None]
    moved.diagnostics = shift_diagnostics(report.diagnostics, lines)
    return moved

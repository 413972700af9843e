"""What a change did to a file's graphs (pure: two reports and two texts in, plain data out).

Per class and level: node counts by opcode before → after, nodes added and removed, failures and graph
breaks that are new or fixed. A node or a failure is known by its opcode/category, its target and the
*text* of the source line it comes from, not the line number: adding a layer in `__init__` moves every
line of `forward` without changing what those lines make.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fxlens.report import ClassReport, Diagnostic, FileReport, LevelResult, Node

BREAK = "graph-break"


@dataclass
class Item:
    """One node or diagnostic as the diff lists it."""

    kind: str  # opcode for a node, category for a diagnostic
    target: str  # node target, or the diagnostic's message
    line: int | None
    text: str  # the source line, stripped

    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.target if self.kind in OPCODES else "", self.text)


OPCODES = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")


@dataclass
class LevelDiff:
    level: str
    before_ok: bool | None  # None: the level was not there (the class is new, or was not traced)
    after_ok: bool | None
    before_ops: dict[str, int] = field(default_factory=dict)
    after_ops: dict[str, int] = field(default_factory=dict)
    added: list[Item] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    new_failures: list[Item] = field(default_factory=list)
    fixed_failures: list[Item] = field(default_factory=list)
    new_breaks: list[Item] = field(default_factory=list)
    fixed_breaks: list[Item] = field(default_factory=list)

    @property
    def node_delta(self) -> int:
        return sum(self.after_ops.values()) - sum(self.before_ops.values())

    @property
    def changed(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.new_failures
            or self.fixed_failures
            or self.new_breaks
            or self.fixed_breaks
            or self.before_ok != self.after_ok
        )


@dataclass
class ClassDiff:
    name: str
    status: str  # "changed" | "same" | "added" | "removed"
    levels: list[LevelDiff] = field(default_factory=list)


@dataclass
class FileDiff:
    path: str
    status: str  # "modified" | "added" | "deleted"
    classes: list[ClassDiff] = field(default_factory=list)
    # problems with the file itself, before and after (a syntax error, an import that fails)
    new_failures: list[Item] = field(default_factory=list)
    fixed_failures: list[Item] = field(default_factory=list)


def _line_text(lines: list[str], line: int | None) -> str:
    return lines[line - 1].strip() if line and 0 < line <= len(lines) else ""


def _nodes(result: LevelResult | None, lines: list[str]) -> list[Item]:
    if result is None or not result.ok:
        return []
    return [Item(n.op, n.target, n.line, _line_text(lines, n.line)) for n in result.nodes]


def _diagnostics(diagnostics: list[Diagnostic], lines: list[str], breaks: bool) -> list[Item]:
    chosen = [d for d in diagnostics if (d.category == BREAK) == breaks and (breaks or d.severity == "error")]
    return [Item(d.category, d.message, d.line, _line_text(lines, d.line)) for d in chosen]


def _minus(these: list[Item], those: list[Item]) -> list[Item]:
    """`these` less `those`, as multisets by key (two equal nodes on one line are two nodes)."""
    left = Counter(item.key() for item in those)
    out = []
    for item in these:
        if left[item.key()]:
            left[item.key()] -= 1
        else:
            out.append(item)
    return out


def _ops(nodes: list[Node]) -> dict[str, int]:
    return dict(Counter(n.op for n in nodes))


def level_diff(
    level: str, before: LevelResult | None, after: LevelResult | None, old_lines: list[str], new_lines: list[str]
) -> LevelDiff:
    old_nodes, new_nodes = _nodes(before, old_lines), _nodes(after, new_lines)
    if not old_nodes or not new_nodes:  # a level that starts or stops tracing: its failure is the news, not every node
        old_nodes = new_nodes = []
    old_diags = before.diagnostics if before else []
    new_diags = after.diagnostics if after else []
    old_fail, new_fail = _diagnostics(old_diags, old_lines, False), _diagnostics(new_diags, new_lines, False)
    old_break, new_break = _diagnostics(old_diags, old_lines, True), _diagnostics(new_diags, new_lines, True)
    return LevelDiff(
        level,
        before.ok if before else None,
        after.ok if after else None,
        _ops(before.nodes) if before and before.ok else {},
        _ops(after.nodes) if after and after.ok else {},
        added=_minus(new_nodes, old_nodes),
        removed=_minus(old_nodes, new_nodes),
        new_failures=_minus(new_fail, old_fail),
        fixed_failures=_minus(old_fail, new_fail),
        new_breaks=_minus(new_break, old_break),
        fixed_breaks=_minus(old_break, new_break),
    )


def class_diff(
    name: str, before: ClassReport | None, after: ClassReport | None, old_lines: list[str], new_lines: list[str]
) -> ClassDiff:
    levels = list(dict.fromkeys([*(before.levels if before else {}), *(after.levels if after else {})]))
    diffs = [
        level_diff(
            level,
            before.levels.get(level) if before else None,
            after.levels.get(level) if after else None,
            old_lines,
            new_lines,
        )
        for level in levels
    ]
    status = (
        "added"
        if before is None
        else "removed"
        if after is None
        else "changed"
        if any(d.changed for d in diffs)
        else "same"
    )
    return ClassDiff(name, status, diffs)


def file_diff(path: str, before: FileReport | None, after: FileReport | None, old_text: str, new_text: str) -> FileDiff:
    old_lines, new_lines = old_text.split("\n"), new_text.split("\n")
    status = "added" if before is None else "deleted" if after is None else "modified"
    old_classes = {c.name: c for c in (before.classes if before else [])}
    new_classes = {c.name: c for c in (after.classes if after else [])}
    classes = [
        class_diff(name, old_classes.get(name), new_classes.get(name), old_lines, new_lines)
        for name in dict.fromkeys([*new_classes, *old_classes])
    ]
    old_file = _diagnostics(before.diagnostics if before else [], old_lines, False)
    new_file = _diagnostics(after.diagnostics if after else [], new_lines, False)
    return FileDiff(path, status, classes, _minus(new_file, old_file), _minus(old_file, new_file))


def short_summary(diff: ClassDiff) -> str:
    """`+12 nodes, +1 break` over the levels that changed (the largest node change of them), for a lens."""
    parts = []
    deltas = [d.node_delta for d in diff.levels if d.before_ok and d.after_ok and d.node_delta]
    if deltas:
        parts.append(f"{max(deltas, key=abs):+d} nodes")
    counts = (
        ("break", sum(len(d.new_breaks) for d in diff.levels) - sum(len(d.fixed_breaks) for d in diff.levels)),
        ("failure", sum(len(d.new_failures) for d in diff.levels)),
        ("fixed", sum(len(d.fixed_failures) for d in diff.levels)),
    )
    for word, count in counts:
        if count:
            parts.append(f"{count} fixed" if word == "fixed" else f"{count:+d} {word}{'s' if abs(count) > 1 else ''}")
    if not parts and diff.status == "changed":
        parts.append("graph changed")
    return ", ".join(parts)

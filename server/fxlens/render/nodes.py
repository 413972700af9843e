"""Questions about a report's nodes that hovers and inlay hints ask: which nodes a line made, through
which instances, who uses them, which nodes touch a member. Pure functions over report data."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from fxlens.render.graph_text import value_text
from fxlens.report import ClassReport, LevelResult, Member, Node


def on_line(result: LevelResult, line: int) -> list[Node]:
    return [n for n in result.nodes if n.line is not None and n.line <= line <= (n.end_line or n.line)]


def covers(node: Node, line: int, col: int) -> bool:
    if node.line is None or not node.line <= line <= (node.end_line or node.line):
        return False
    if line == node.line and col < (node.col or 0):
        return False
    return not (line == (node.end_line or node.line) and node.end_col is not None and col >= node.end_col)


def _width(node: Node) -> tuple[int, int]:
    return ((node.end_line or node.line or 0) - (node.line or 0), (node.end_col or 0) - (node.col or 0))


def leaf_paths(report: ClassReport) -> set[str]:
    """Instance paths of modules called as leaves (fx `call_module` targets): not instances of a forward."""
    fx = report.levels.get("fx")
    return {n.target for n in fx.nodes if n.op == "call_module"} if fx else set()


def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split(".")) if path else ()


def _owner(node: Node, leaves: set[str]) -> str:
    """The instance whose forward produced the node (a leaf module's call belongs to its caller)."""
    scope = node.scope
    if scope in leaves or (node.op in ("call_module", "get_attr") and scope == node.target):
        scope = scope.rpartition(".")[0]
    return scope


@dataclass
class Instance:
    path: str  # "" for the traced class itself, "blocks.0" for a child instance
    nodes: list[Node]


def instances(nodes: list[Node], leaves: set[str]) -> list[Instance]:
    """The nodes of one line split by the instance that made them, in graph order."""
    owners = [_owner(n, leaves) for n in nodes]
    # a scope nested inside another scope of the same line belongs to the outer one
    roots = [
        o
        for o in dict.fromkeys(owners)
        if not any(_parts(other) == _parts(o)[: len(_parts(other))] and other != o for other in set(owners))
    ]
    groups: dict[str, list[Node]] = {root: [] for root in roots}
    for node, owner in zip(nodes, owners):
        root = next((r for r in roots if _parts(owner)[: len(_parts(r))] == _parts(r)), owner)
        groups.setdefault(root, []).append(node)
    return [Instance(path, members) for path, members in groups.items()]


def local_target(node: Node, instance: str) -> str:
    if instance and node.op in ("call_module", "get_attr") and node.target.startswith(instance + "."):
        return node.target[len(instance) + 1 :]
    return node.target


# what an instance's nodes compute on a line, comparable between instances: (op, target, shape, dtype) per node
Signature = tuple[tuple[Any, ...], ...]


def signature(nodes: list[Node], instance: str) -> Signature:
    return tuple((n.op, local_target(n, instance), tuple(n.shape or ()), n.dtype) for n in nodes)


def by_name(result: LevelResult) -> dict[str, Node]:
    return {n.name: n for n in result.nodes}


def user_lines(result: LevelResult, node: Node, index: dict[str, Node] | None = None) -> list[str]:
    """Where the node's users are. Pass `index` (by_name of the result) when asking for many nodes:
    building it is O(nodes), and once per node made a hover over a big class take ~20 ms."""
    by_name = index if index is not None else {n.name: n for n in result.nodes}
    seen: list[str] = []
    for name in node.users:
        user = by_name.get(name)
        label = (
            "output"
            if user is not None and user.op == "output"
            else (f"L{user.line}" if user is not None and user.line is not None else "?")
        )
        if label not in seen:
            seen.append(label)
    return seen


# fx spells some ops differently from their aten overloads (`operator.truediv` is `aten.div.Tensor`)
_SAME_OP = {
    "truediv": "div",
    "itruediv": "div",
    "iadd": "add",
    "isub": "sub",
    "imul": "mul",
    "floordiv": "floor_divide",
}


def _op_name(target: str) -> str:
    """`operator.add`, `torch.relu`, `add` (a method), `aten.add.Tensor`, `aten._softmax.default` -> one name."""
    parts = target.split(".")
    name = parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[-1]
    name = name.strip("_")
    return _SAME_OP.get(name, name)


def _computation(node: Node, modules: list[str]) -> tuple[str, str]:
    """What a node computes, comparable across levels: a leaf module call is the aten nodes inside it."""
    if node.op == "call_module":
        return ("module", node.target)
    if node.op in ("call_function", "call_method"):
        owner = next((m for m in modules if node.scope == m or node.scope.startswith(m + ".")), None)
        if owner is not None and node.target.startswith("aten."):
            return ("module", owner)
        return ("op", _op_name(node.target))
    return (node.op, node.name)  # get_attr and the rest have no counterpart


def _same_place(fx: Node, aten: Node) -> bool:
    """aten spans are whole lines (export's stack traces have no columns): the fx span must lie on them."""
    if fx.line is None or aten.line is None:
        return False
    return aten.line <= fx.line <= (aten.end_line or aten.line) or fx.line <= aten.line <= (fx.end_line or fx.line)


# a row of the hover's table: an fx node and the aten node of the same computation, or either alone
Row = tuple[Node | None, Node | None]


def pair_levels(fx: list[Node], aten: list[Node]) -> list[Row]:
    """Rows of (fx node, aten node): side by side only when they are the same computation from the same
    source span, in order (`call_module fc` with the `aten.linear` it runs, `operator.add` with
    `aten.add.Tensor`); every other node has a row of its own."""
    modules = [n.target for n in fx if n.op == "call_module"]
    keys_fx = [_computation(n, modules) for n in fx]
    keys_aten = [_computation(n, modules) for n in aten]
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys_fx, keys_aten, autojunk=False).get_opcodes():
        if tag == "equal":
            for a, b in zip(fx[i1:i2], aten[j1:j2]):
                rows += [(a, b)] if _same_place(a, b) else [(a, None), (None, b)]
        else:
            rows += [(n, None) for n in fx[i1:i2]] + [(None, n) for n in aten[j1:j2]]
    return rows


def cursor_first(rows: list[Row], line: int, col: int) -> list[Row]:
    """Rows whose node spans the cursor come first, innermost (narrowest span) first."""

    def key(row: Row) -> tuple[int, tuple[int, int]]:
        hits = [_width(n) for n in row if n is not None and covers(n, line, col)]
        return (0, min(hits)) if hits else (1, (0, 0))

    return sorted(rows, key=key)


def under_cursor(rows: list[Row], line: int, col: int) -> list[Row]:
    """The rows holding the narrowest node that spans the cursor (the sub-expression it is on)."""
    widths = {
        id(row): min((_width(n) for n in row if n is not None and covers(n, line, col)), default=None) for row in rows
    }
    best = min((w for w in widths.values() if w is not None), default=None)
    return [row for row in rows if best is not None and widths[id(row)] == best]


def value(node: Node | None) -> str:
    return value_text(node) if node is not None else ""


def _flat(name: str) -> str:
    return re.sub(r"\W", "_", name)


def member_nodes(report: ClassReport, member: Member, level: str) -> list[Node]:
    """Nodes of `level` that use `member`: its call_module / get_attr, or (aten) what reads its tensors."""
    result = report.levels.get(level)
    if result is None:
        return []
    name = member.name
    found: dict[str, Node] = {}
    placeholders = re.compile(rf"^[pbc]_{re.escape(_flat(name))}($|_)")
    by_name = {n.name: n for n in result.nodes}
    for node in result.nodes:
        if node.op in ("call_module", "get_attr") and (node.target == name or node.target.startswith(name + ".")):
            found[node.name] = node
        elif node.op == "placeholder" and placeholders.match(node.name):
            for user in node.users:
                if user in by_name and by_name[user].op != "output":
                    found[user] = by_name[user]
        elif node.op == "call_function" and node.scope and (node.scope == name or node.scope.startswith(name + ".")):
            found[node.name] = node
    order = {n.name: i for i, n in enumerate(result.nodes)}
    return sorted(found.values(), key=lambda n: order[n.name])


def opcode_counts(result: LevelResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in result.nodes:
        counts[node.op] = counts.get(node.op, 0) + 1
    return counts

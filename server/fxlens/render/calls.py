"""What a parent's line calls: `x = block(x)` makes no node of its own (symbolic_trace puts every node of
the child on the child's lines), so its hover says which child it runs, how often, and what goes in and
comes out, from the fx level's module scopes (pure: report -> text)."""

from __future__ import annotations

from dataclasses import dataclass

from fxlens.render.graph_text import value_text
from fxlens.report import ClassReport, LevelResult, Node


@dataclass
class ChildCall:
    """The instances of one child class that a line calls."""

    class_name: str
    paths: list[str]  # the instances' module paths, in call order
    node_counts: list[int]  # fx nodes each instance made
    enters: str  # the first instance's input value ("(B, T, 768) f32")
    leaves: str  # the last instance's output value


def _inside(result: LevelResult, path: str) -> list[Node]:
    return [n for n in result.nodes if n.scope == path or n.scope.startswith(path + ".")]


def _enters(result: LevelResult, inside: list[Node]) -> str:
    names = {n.name for n in inside}
    feeding = next(
        (
            n
            for n in result.nodes
            if n.name not in names and n.op != "get_attr" and any(user in names for user in n.users)
        ),
        None,
    )
    return value_text(feeding) if feeding is not None else ""


def calls_on_line(cls: ClassReport, line: int) -> list[ChildCall]:
    """The child modules the line calls that made nodes of their own, grouped by class, in call order."""
    result = cls.levels.get("fx")
    if result is None or not result.ok:
        return []
    called = [
        path
        for path, scope in result.scopes.items()
        if scope.get("line") == line
        and not any(path.startswith(other + ".") for other, s in result.scopes.items() if s.get("line") == line)
    ]
    calls: dict[str, ChildCall] = {}
    for path in called:
        inside = _inside(result, path)
        if not inside:
            continue
        name = result.scopes[path].get("class", "")
        call = calls.get(name)
        if call is None:
            call = calls[name] = ChildCall(name, [], [], _enters(result, inside), "")
        call.paths.append(path)
        call.node_counts.append(len(inside))
        call.leaves = value_text(inside[-1])
    return list(calls.values())


def call_text(call: ChildCall) -> str:
    """`Block ×12 (36 nodes each), (B, T, 768) f32 → (B, T, 768) f32`."""
    low, high = min(call.node_counts), max(call.node_counts)
    count = f"{low}" if low == high else f"{low}–{high}"
    each = " each" if len(call.paths) > 1 else ""
    times = f" ×{len(call.paths)}" if len(call.paths) > 1 else ""
    flow = f", {call.enters} → {call.leaves}" if call.enters and call.leaves else ""
    return f"{call.class_name}{times} ({count} fx nodes{each}){flow}"

"""Hover lines on what an ATen node is and costs: the overload's schema and its siblings (the overload
pins the kernel), and a line's or a class's forward FLOPs at the example size. Pure: report -> text."""

from __future__ import annotations

from collections.abc import Callable

from fxlens.report import Build, ClassReport, Cost, LevelResult, Node
from fxlens.units import bytes_text

# a line of a big model makes dozens of aten nodes: the hover names the first few distinct overloads
MAX_SCHEMAS = 3
MAX_SIBLINGS = 8
ATEN_LEVELS = ("aten", "core-aten")


def _packet(target: str) -> str:
    parts = target.split(".")
    return parts[1] if len(parts) > 2 else parts[-1]


def schema_lines(
    code: Callable[[str], str], bold: Callable[[str], str], nodes: list[tuple[LevelResult, Node]], newline: str = "\n"
) -> list[str]:
    """For the first MAX_SCHEMAS distinct targets of `nodes` (cursor's first): the schema torch declares,
    then the packet's overloads with the chosen one in bold."""
    lines: list[str] = []
    seen: list[str] = []
    for result, node in nodes:
        entry = result.schemas.get(node.target)
        if entry is None or node.target in seen:
            continue
        seen.append(node.target)
        if len(seen) > MAX_SCHEMAS:
            continue
        siblings = [bold(name) if name == node.overload else name for name in entry["overloads"][:MAX_SIBLINGS]]
        more = f", … {len(entry['overloads']) - MAX_SIBLINGS} more" if len(entry["overloads"]) > MAX_SIBLINGS else ""
        count = len(entry["overloads"])
        pins = "; the overload pins the kernel" if len(seen) == 1 else ""
        lines.append(
            f"{code(entry['schema'])}{newline}{code(_packet(node.target))} has {count} overload"
            f"{'s' if count != 1 else ''}: {', '.join(siblings)}{more}{pins}"
        )
    if len(seen) > MAX_SCHEMAS:
        lines.append(f"… {len(seen) - MAX_SCHEMAS} more overloads on this line")
    return lines


def flops_text(count: float) -> str:
    """`1234567` -> `1.2 MFLOP` (decimal prefixes, as FlopCounterMode's own table prints them)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {prefix}FLOP"
    return f"{int(count)} FLOP"


def example_size(build: Build) -> str:
    """`(B=2, T=8)` for free sizes, else the inputs' shapes: `(x: (2, 3))`."""
    if build.sizes:
        return "(" + ", ".join(f"{name}={size}" for name, size in build.sizes.items()) + ")"
    shapes = [f"{i.name}: ({', '.join(map(str, i.shape))})" for i in build.inputs if i.shape is not None]
    return f"({', '.join(shapes)})" if shapes else ""


def total_flops(nodes: list[Node]) -> int | None:
    """The nodes' FLOPs; None when no node was counted (a level traced without counts)."""
    counted = [n.flops for n in nodes if n.flops is not None]
    return sum(counted) if counted else None


def flops_line(nodes: list[Node], build: Build, what: str = "") -> str | None:
    """`≈ 1.2 MFLOP at the example size (B=2, T=8)`; None when nothing computes (no count or 0)."""
    total = total_flops(nodes)
    if not total:
        return None
    uncounted = sum(1 for n in nodes if n.flops is None and n.op == "call_function" and n.target.startswith("aten."))
    partial = f" ({uncounted} node{'s' if uncounted != 1 else ''} not counted)" if uncounted else ""
    return f"≈ {flops_text(total)}{what} at the example size {example_size(build)}{partial}".replace("  ", " ")


def count_text(count: int) -> str:
    """`212`, `12.3 K`, `124.4 M` (parameter elements)."""
    for prefix, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {prefix}"
    return str(count)


def _bytes_text(count: int) -> str:
    return bytes_text(count)


def _parameters(cost: Cost) -> str:
    frozen = cost.parameters - cost.trainable
    return count_text(cost.parameters) + (f" ({count_text(frozen)} frozen)" if frozen else "")


# how a reader gets a level traced, in the words of where they read it: the editor's setting (a hover on
# the class computes the deeper levels anyway), the CLI's flag
ADD_LEVEL = {
    "editor": "hover again once it is computed, or add `{level}` to the `fxlens.levels` setting",
    "cli": "add `--level {level}`",
}


def _saved(cls: ClassReport) -> tuple[int, int] | None:
    """(bytes, values) the forward saves for backward: the cost's, or the backward level's when it came
    later (computed on demand for a hover) than the cost."""
    cost, held = cls.cost, cls.levels.get("backward")
    if cost is not None and cost.saved_bytes is not None:
        return cost.saved_bytes, cost.saved_values or 0
    if held is not None and held.ok:
        saved = [n for n in held.nodes if n.saved]
        return sum(n.bytes or 0 for n in saved), len(saved)
    return None


def class_cost_lines(cls: ClassReport, surface: str = "editor") -> list[str]:
    """The class hover's cost: parameters, forward and backward FLOPs, what the forward saves for backward,
    all at the example size. `surface`: "editor" or "cli", whose words say how to add a level."""
    cost = cls.cost
    if cost is None:
        return []
    at = f"at the example size {example_size(cls.build)}".rstrip()
    lines = [f"parameters: {_parameters(cost)}"]
    if cost.forward_flops is not None:
        backward = (
            f" + {flops_text(cost.backward_flops)} backward"
            if cost.backward_flops is not None
            else " (no backward: nothing requires grad)"
        )
        lines.append(f"≈ {flops_text(cost.forward_flops)} forward{backward} {at}")
    saved = _saved(cls)
    if saved is not None:
        lines.append(
            f"saves {_bytes_text(saved[0])} for backward ({saved[1]} value"
            f"{'s' if saved[1] != 1 else ''}, torch.compile's min-cut partition) {at}"
        )
    elif cost.trainable and "backward" not in cls.levels:  # (a failed backward level says why itself)
        lines.append(
            "saved for backward: the `backward` level is not traced yet ("
            + ADD_LEVEL.get(surface, ADD_LEVEL["editor"]).format(level="backward")
            + ")"
        )
    if cost.note:
        lines.append(cost.note)
    return lines


def cost_compact(cls: ClassReport) -> str | None:
    """One line for the lens and the CLI header: `cost: 212 params · 1.5 KFLOP fwd + 2.0 KFLOP bwd ·
    saves 640 B at the example size (B=2, T=8)`; None before the cost is known."""
    cost = cls.cost
    if cost is None:
        return None
    parts = [f"{count_text(cost.parameters)} params"]
    if cost.forward_flops is not None:
        parts.append(
            f"{flops_text(cost.forward_flops)} fwd"
            + (f" + {flops_text(cost.backward_flops)} bwd" if cost.backward_flops is not None else "")
        )
    if cost.saved_bytes is not None:
        parts.append(f"saves {_bytes_text(cost.saved_bytes)}")
    sized = cost.forward_flops is not None or cost.saved_bytes is not None
    return "cost: " + " · ".join(parts) + (f" at the example size {example_size(cls.build)}".rstrip() if sized else "")

"""Before → after: node counts by opcode, the nodes removed / added / retargeted / changed, the printouts' diff."""

from __future__ import annotations

import difflib
import sys
from collections import Counter
from typing import Any

import torch
import torch.fx as fx

from fxlens.pass_report import NodeChange
from fxlens.report import OPCODES, Node
from fxlens.worker.levels.fx import nodes_of, target_text
from fxlens.worker.levels.values import SampledSizes
from fxlens.worker.passes.provenance import replaced_names


def counts(gm: fx.GraphModule) -> dict[str, int]:
    found = Counter(node.op for node in gm.graph.nodes)
    return {op: found[op] for op in OPCODES if found[op]}


def report_nodes(gm: fx.GraphModule, lines_from: dict[str, Node]) -> list[Node]:
    """The graph's nodes as report data; a node the pass made without the user's source span gets the
    span of the original node of the same name (a pass that re-traces keeps names, not meta)."""
    nodes = nodes_of(gm.graph, {}, SampledSizes({}), {})
    for node in nodes:
        known = lines_from.get(node.name)
        if node.line is None and known is not None and known.line is not None:
            node.function, node.line, node.col, node.end_line, node.end_col = (
                known.function,
                known.line,
                known.col,
                known.end_line,
                known.end_col,
            )
    return nodes


def _module_type(gm: fx.GraphModule, node: fx.Node) -> str:
    if node.op != "call_module" or not isinstance(node.target, str):  # (a module's target is its path)
        return ""
    try:
        kind = type(gm.get_submodule(node.target))
    except AttributeError:
        return ""
    # torch.nn's own classes by name; any other by the shortest module that exports it (a QAT Conv2d is
    # not nn.Conv2d: torch.ao.nn.qat.Conv2d)
    parts = kind.__module__.split(".")
    where = kind.__module__
    for end in range(len(parts) - 1, 0, -1):
        if getattr(sys.modules.get(".".join(parts[:end])), kind.__name__, None) is kind:
            where = ".".join(parts[:end])
    return kind.__name__ if where == "torch.nn" else f"{where}.{kind.__name__}"


def _what(gm: fx.GraphModule, node: fx.Node) -> tuple[str, str]:
    """(op, target) as the printout says them; a module call names its module's class too."""
    kind = _module_type(gm, node)
    return node.op, target_text(node) + (f" ({kind})" if kind else "")


def _spanned(change: NodeChange, node: Node | None) -> NodeChange:
    if node is not None:
        change.line, change.col, change.end_line, change.end_col = node.line, node.col, node.end_line, node.end_col
    return change


def _tensors(value: Any) -> dict[str, Any]:
    """A module's parameters and buffers by name, or a tensor attribute as one unnamed entry."""
    if isinstance(value, torch.nn.Module):
        return {**dict(value.named_parameters()), **dict(value.named_buffers())}
    return {"": value} if isinstance(value, torch.Tensor) else {}


def _same(a: Any, b: Any) -> bool | None:
    """Whether two tensors hold the same values; None when that cannot be known (meta tensors)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device.type == "meta" or b.device.type == "meta":
        return None
    return torch.equal(a.detach().cpu(), b.detach().cpu())


def _names(names: list[str], verb: str) -> str:
    return f"{', '.join(names)} {verb}" if names else ""


def held_values(gm: fx.GraphModule) -> dict[str, Any]:
    """What the call_module and get_attr nodes of `gm` reach, kept before a pass runs on it: after it,
    `changes` tells a module the pass replaced (another object under the same name) from one it kept."""
    return {str(node.target): _reached(gm, node) for node in gm.graph.nodes if node.op in ("call_module", "get_attr")}


def _reached(gm: fx.GraphModule, node: fx.Node) -> Any:
    value: Any = gm
    for part in str(node.target).split("."):
        value = getattr(value, part, None)
    return value


def module_change(before: Any, after: Any, replaced: bool) -> str:
    """What a pass changed in what one node reaches (its module, or a tensor attribute), in words;
    "" when nothing did. Values are compared where they are real (a meta module has only shapes)."""
    old, new = _tensors(before), _tensors(after)
    same = {name: _same(old[name], new[name]) for name in old if name in new}
    parts = [
        _names([n for n in new if n not in old], "added"),
        _names([n or "value" for n, equal in same.items() if equal is False], "changed"),
        _names([n for n in old if n not in new], "removed"),
    ]
    said = "; ".join(p for p in parts if p)
    # another object whose values cannot be compared (meta) is said to be replaced; one equal to the old, not
    if replaced and (said or None in same.values()):
        return "module replaced" + (f": {said}" if said else "")
    return said


def changes(before: fx.GraphModule, after: fx.GraphModule, held: dict[str, Any] | None = None) -> list[NodeChange]:
    """`held`: held_values of the graph module the pass ran on, taken before it ran."""
    old = {node.name: node for node in before.graph.nodes}
    new = {node.name: node for node in after.graph.nodes}
    old_nodes = {n.name: n for n in report_nodes(before, {})}
    new_nodes = {n.name: n for n in report_nodes(after, old_nodes)}
    found: list[NodeChange] = []
    for name, node in old.items():
        op, target = _what(before, node)
        if name not in new:
            found.append(_spanned(NodeChange("removed", name, op, target), old_nodes.get(name)))
            continue
        now_op, now_target = _what(after, new[name])
        if (now_op, now_target) != (op, target):
            found.append(
                _spanned(
                    NodeChange("retargeted", name, now_op, now_target, before=f"{op}[{target}]"), old_nodes.get(name)
                )
            )
        elif op in ("call_module", "get_attr") and new[name].target == node.target:
            now = _reached(after, new[name])
            replaced = held is not None and str(node.target) in held and held[str(node.target)] is not now
            detail = module_change(_reached(before, node), now, replaced)
            if detail:
                found.append(_spanned(NodeChange("changed", name, op, target, detail=detail), old_nodes.get(name)))
    for name, node in new.items():
        if name in old:
            continue
        op, target = _what(after, node)
        sources = [n for n in replaced_names(node) if n in old]
        replaces, took = [n for n in sources if n not in new], [n for n in sources if n in new]
        change = NodeChange(
            "added", name, op, target, replaces=replaces, took_users_of=took, how="from_node" if sources else "name"
        )
        # where the user's code made it: its own span, else that of what it replaces, else of its input
        # (an observer watches the value of the line before it)
        spanned = new_nodes.get(name)
        for other in [*sources, *(str(a) for a in node.all_input_nodes)]:
            if spanned is not None and spanned.line is not None:
                break
            spanned = old_nodes.get(other) or new_nodes.get(other)
        found.append(_spanned(change, spanned))
    return found


def printout_diff(before: fx.GraphModule, after: fx.GraphModule) -> str:
    lines = difflib.unified_diff(
        str(before.graph).splitlines(), str(after.graph).splitlines(), "before", "after", lineterm=""
    )
    return "\n".join(lines)

"""Before → after: node counts by opcode, the nodes removed / added / retargeted, the printouts' diff."""
from __future__ import annotations

import difflib
import sys
from collections import Counter

import torch.fx as fx

from fxlens.pass_report import NodeChange
from fxlens.report import OPCODES, Node
from fxlens.worker.passes.provenance import replaced_names
from fxlens.worker.levels.fx import nodes_of, target_text
from fxlens.worker.levels.values import SampledSizes


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
                known.function, known.line, known.col, known.end_line, known.end_col)
    return nodes


def _module_type(gm: fx.GraphModule, node: fx.Node) -> str:
    if node.op != "call_module":
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


def changes(before: fx.GraphModule, after: fx.GraphModule) -> list[NodeChange]:
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
            found.append(_spanned(NodeChange("retargeted", name, now_op, now_target, before=f"{op}[{target}]"),
                                  old_nodes.get(name)))
    for name, node in new.items():
        if name in old:
            continue
        op, target = _what(after, node)
        replaces = [n for n in replaced_names(node) if n in old]
        change = NodeChange("added", name, op, target, replaces=replaces, how="from_node" if replaces else "name")
        # where the user's code made it: its own span, else that of what it replaces, else of its input
        # (an observer watches the value of the line before it)
        spanned = new_nodes.get(name)
        for other in [*replaces, *(str(a) for a in node.all_input_nodes)]:
            if spanned is not None and spanned.line is not None:
                break
            spanned = old_nodes.get(other) or new_nodes.get(other)
        found.append(_spanned(change, spanned))
    return found


def printout_diff(before: fx.GraphModule, after: fx.GraphModule) -> str:
    lines = difflib.unified_diff(str(before.graph).splitlines(), str(after.graph).splitlines(),
                                 "before", "after", lineterm="")
    return "\n".join(lines)

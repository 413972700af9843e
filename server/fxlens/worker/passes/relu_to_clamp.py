"""Replace an op by another: every relu becomes `torch.clamp(x, min=0)` (equal results, another op).

A functional relu is retargeted in place (same node, new target); a method or module relu is a new
call_function node that takes over its users (the old node is erased).
"""

from __future__ import annotations

import torch
import torch.fx as fx

from fxlens.worker.passes.relus import is_relu, relu_input


def run(gm: fx.GraphModule) -> fx.GraphModule:
    modules = dict(gm.named_modules())
    graph = gm.graph
    for node in list(graph.nodes):
        if not is_relu(node, modules):
            continue
        source = relu_input(node)
        if node.op == "call_function":
            node.target, node.args, node.kwargs = torch.clamp, (source,), {"min": 0}
            continue
        with graph.inserting_after(node):
            clamp = graph.call_function(torch.clamp, (source,), {"min": 0})
        clamp.meta.update(node.meta)
        node.replace_all_uses_with(clamp)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm

"""The lessons' fusion: a Linear whose only user is a ReLU becomes one LinearReLU node.

The steps are the lesson's: insert the fused call, `replace_all_uses_with` it for the relu,
`eliminate_dead_code()` (the relu and then the Linear lose their last user), `graph.lint()`, `recompile()`.
The fused module is torch's own `torch.ao.nn.intrinsic.LinearReLU` (what quantization fuses to), holding
the very Linear: the same weights, the same arithmetic, so the outputs are equal bit for bit.
"""

from __future__ import annotations

import torch.fx as fx
from torch import nn
from torch.ao.nn.intrinsic import LinearReLU
from torch.fx.traceback import NodeSource, NodeSourceAction

from fxlens.worker.passes.relus import is_relu


def _free_name(gm: fx.GraphModule, wanted: str) -> str:
    name, index = wanted, 1
    while hasattr(gm, name):
        name, index = f"{wanted}_{index}", index + 1
    return name


def run(gm: fx.GraphModule) -> fx.GraphModule:
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        linear = modules.get(node.target) if node.op == "call_module" else None
        if not isinstance(linear, nn.Linear) or len(node.users) != 1:
            continue
        relu = next(iter(node.users))
        if not is_relu(relu, modules) or relu.args[:1] != (node,):
            continue
        name = _free_name(gm, f"{node.target.replace('.', '_')}_relu")
        gm.add_submodule(name, LinearReLU(linear, nn.ReLU()))
        with gm.graph.inserting_after(relu):
            fused = gm.graph.call_module(name, node.args, node.kwargs)
        fused.meta.update(node.meta)  # where it came from in the user's file: the Linear's line
        # made from the Linear (and, once it takes over the relu's users, from the relu: provenance.py)
        fused.meta["from_node"] = [NodeSource(node, "fuse-linear-relu", NodeSourceAction.CREATE)]
        relu.replace_all_uses_with(fused)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return gm

"""Dead-code elimination: torch.fx's own, nodes whose value nobody uses (impure ones are kept)."""

from __future__ import annotations

import torch.fx as fx


def run(gm: fx.GraphModule) -> fx.GraphModule:
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm

"""The built-in passes: one module per pass, each with one entry point `run(gm) -> GraphModule | None`
(mutate `gm` or return a new one, the contract of a user's `# fxlens: pass` function too).

The names and descriptions are pass_catalog.BUILTIN_PASSES (what the server lists without torch);
runner.py runs a built-in and a user pass alike.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.fx as fx

from fxlens.pass_catalog import BUILTIN_NAMES
from fxlens.worker.passes import dead_code, fuse_linear_relu, quantize, relu_to_clamp

Pass = Callable[[fx.GraphModule], fx.GraphModule | None]

TABLE: dict[str, Pass] = {
    "dead-code": dead_code.run,
    "fuse-linear-relu": fuse_linear_relu.run,
    "relu-to-clamp": relu_to_clamp.run,
    "prepare-fx": quantize.prepare,
    "prepare-qat-fx": quantize.prepare_qat,
}
assert tuple(TABLE) == BUILTIN_NAMES, "every built-in pass is described in pass_catalog.BUILTIN_PASSES"

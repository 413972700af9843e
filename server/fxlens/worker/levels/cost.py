"""What one call of a class costs at the example size: its parameters, the forward and backward FLOPs
torch.utils.flop_counter.FlopCounterMode counts (on meta tensors: nothing is allocated), and the memory
the forward saves for backward as the backward level's min-cut partition chose it."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.parameter import is_lazy
from torch.utils.flop_counter import FlopCounterMode

from fxlens.report import Cost, LevelResult
from fxlens.worker.failures.classify import message_text
from fxlens.worker.levels import devices
from fxlens.worker.levels.backward import scalar_loss

# FLOPs need values only where the forward reads one (`.item()`): real CPU tensors are not worth it here
KINDS = ("meta", "fake")


def _flops(module: torch.nn.Module, call: tuple) -> tuple[int, int | None]:
    """Forward FLOPs, and the backward's of the scalar the backward level differentiates (None: nothing
    requires grad). Gradients are returned, not accumulated: the instance's `.grad`s stay unset."""
    args, kwargs = call
    with FlopCounterMode(display=False) as forward:
        out = module(*args, **kwargs)
    trainable = [p for p in module.parameters() if p.requires_grad]
    if not trainable:
        return forward.get_total_flops(), None
    loss, _ = scalar_loss(out)
    with FlopCounterMode(display=False) as backward:
        torch.autograd.grad(loss, trainable, allow_unused=True)
    return forward.get_total_flops(), backward.get_total_flops()


def class_cost(example: Any, backward: LevelResult | None) -> Cost:
    """`backward`: the backward level's result, when it was traced (what is saved comes from it)."""
    parameters = [p for p in example.instance.parameters() if not is_lazy(p)]  # (a lazy layer's: no size yet)
    cost = Cost(
        parameters=sum(p.numel() for p in parameters), trainable=sum(p.numel() for p in parameters if p.requires_grad)
    )
    if backward is not None and backward.ok:
        saved = [n for n in backward.nodes if n.saved]
        cost.saved_values, cost.saved_bytes = len(saved), sum(n.bytes or 0 for n in saved)
    if example.inputs is None:
        cost.note = "no example inputs: FLOPs are counted on them"
        return cost
    try:
        ran = devices.run(
            _flops,
            example.instance,
            (example.inputs, example.kwargs),
            "meta",
            getattr(example, "rebuild", None),
            kinds=KINDS,
        )
    except Exception as error:  # noqa: BLE001  the levels' own diagnostics say what fails; here a missing number
        cost.note = f"FLOPs not counted: {type(error).__name__}: {message_text(error)}"[:300]
        return cost
    cost.forward_flops, cost.backward_flops = ran.value
    return cost

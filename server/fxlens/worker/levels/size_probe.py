"""Whether a class's graph could depend on its free sizes, told by two eager runs on meta tensors instead of
a second torch.export.

The aten level exports the inputs a second time with B doubled and T tripled (aten._scaled_export). For the
editor that export names the sizes (B, T) in every shape; for a caller that shows no shape (`fxlens check`:
findings only) it is needed only for the specialisation hints (specialise.py), which it finds where the scaled
graph differs from the example's or fails. A graph differs only where Python code that runs in forward (the
user's or a library's) reads a size and calls other torch ops for it: a loop over `x.size(0)`, an `if` or an
`assert` on a shape, a `.view(2, 8)`. Those same calls show up in an eager run, as a different sequence of
aten ops or an error. So: forward runs eagerly on the example's meta inputs and on the scaled ones, with a
TorchDispatchMode recording each op called; where both run and call the same ops in the same order, the
scaled export would give the example's graph, and is not needed. The two runs cost ~5% of one export on the
real-model tree (bench/RESULTS.md). Anything else (an error in either run, inputs not on the meta device so
that a run would compute for real) answers "it could", and the scaled export runs as before.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fxlens.worker.levels import instance_state
from fxlens.worker.levels.values import scale_up


class _Ops(TorchDispatchMode):
    """Records the name of every aten op the code run under it calls, and runs the op."""

    def __init__(self) -> None:
        super().__init__()
        self.called: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        self.called.append(str(func))
        return func(*args, **(kwargs or {}))


def _on_meta(value: Any) -> bool:
    """Every tensor of an input (tuples of tensors included) is on the meta device: a run allocates nothing."""
    if isinstance(value, torch.Tensor):
        return value.device.type == "meta"
    if isinstance(value, (tuple, list)):
        return all(_on_meta(item) for item in value)
    return True


def _ops(module: torch.nn.Module, args: tuple, kwargs: dict) -> list[str]:
    # eager for real: code that compiles inside forward (torch.cond does, outside a trace) compiled under the
    # recording mode fails, and torch.compile keeps that failure for the export that follows
    with torch.compiler.set_stance("force_eager"), instance_state.kept(module), _Ops() as mode:
        module(*args, **kwargs)  # (kept: a forward that assigns to its module leaves it as built)
    return mode.called


def could_depend(example: Any, free: list) -> bool:
    """False when forward calls the same aten ops, in the same order, on the example's inputs and on the
    inputs with their free sizes scaled up (values.scale_up): then the scaled export's graph is the example's."""
    flat = example.flat()
    if not all(_on_meta(value) for value in flat):
        return True
    try:
        before = _ops(example.instance, example.inputs, example.kwargs)
        after = _ops(example.instance, *example.unflat(scale_up(flat, free)))
    except Exception:  # noqa: BLE001  e.g. `.item()` on meta, a size check the scaled sizes fail: the export says
        return True
    return before != after

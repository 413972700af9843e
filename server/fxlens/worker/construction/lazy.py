"""`nn.Lazy*` modules get their shapes from one forward on meta tensors, before any level traces them.

A lazy module (`nn.LazyLinear(10)`) infers its input size from the first input it sees: until then its
parameters have no shape, and neither torch.fx (whose proxies cannot size them), torch.export nor fxlens's
own member list can read them. Once a class has inputs (a directive's, or inferred), it runs once on meta
tensors with those inputs: the lazy modules become what they are meant to be (`Linear`), and everything else
that forward changed is undone (levels/instance_state.py). No memory is spent: the parameters are meta.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from fxlens.worker.levels import devices
from fxlens.worker.levels.instance_state import Snapshot


def unmaterialised(module: nn.Module) -> list[str]:
    """The paths of the lazy submodules whose parameters have no shape yet (`""` for the module itself)."""
    return [
        path
        for path, sub in module.named_modules()
        if isinstance(sub, LazyModuleMixin) and sub.has_uninitialized_params()  # type: ignore[misc]
    ]


def materialise(instance: nn.Module, inputs: tuple, kwargs: dict) -> BaseException | None:
    """Run `instance` once on meta copies of its inputs, keeping only what its lazy modules became; the
    error of a run that failed (the instance is then as it was)."""
    snapshot = Snapshot(instance)
    try:
        with torch.no_grad():
            instance(*devices.convert(inputs, "meta"), **devices.convert(kwargs, "meta"))
    except Exception as error:  # noqa: BLE001  the user's forward: said in the class's diagnostic
        snapshot.restore()
        return error
    snapshot.restore(keep_materialised=True)
    return None

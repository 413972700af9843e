"""A parent's run recorded for its children: each submodule's first call, as the parent really makes it,
on the cheapest tensors that run the parent, and which of each child's dims follow the parent's free sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._pytree import tree_map

from fxlens.worker.levels import devices
from fxlens.worker.levels.values import GROWTH, SampledSizes, free_sizes, scale_up


class _Enough(BaseException):
    """Every submodule asked about has been called: the rest of forward is not needed."""


def _record_calls(
    instance: nn.Module, args: tuple, kwargs: dict, wanted: set[type] | None = None
) -> tuple[dict[int, tuple[tuple, dict]], BaseException | None]:
    """Run `instance` once and keep, per submodule, the first arguments it received; and the error that
    stopped the run, if one did (the calls made before it are kept: those children have their inputs).

    With `wanted` (classes), the run stops as soon as the first instance of each of those classes
    has been called: on a deep model that is the first layer, not all eighty."""
    calls: dict[int, tuple[tuple, dict]] = {}
    firsts: dict[type, int] = {}
    for path, sub in instance.named_modules():
        if path and wanted is not None and type(sub) in wanted:
            firsts.setdefault(type(sub), id(sub))
    awaited = set(firsts.values()) if wanted is not None else None

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        # the containers as they are at the call: a list the parent appends to later must not grow in the record
        calls.setdefault(id(module), tree_map(lambda leaf: leaf, (args, kwargs)))
        if awaited is not None and awaited <= calls.keys():
            raise _Enough

    handles = [sub.register_forward_pre_hook(hook, with_kwargs=True) for path, sub in instance.named_modules() if path]
    error: BaseException | None = None
    try:
        with torch.no_grad():
            instance(*args, **kwargs)
    except _Enough:
        pass
    except Exception as failure:  # noqa: BLE001  the user's forward: the parent's own trace reports it
        error = failure
    finally:
        for handle in handles:
            handle.remove()
    return calls, error


def _free_dims(first: Any, second: Any, names: SampledSizes) -> dict[int, str] | None:
    """The dims of a child's tensor that are exactly one of the parent's free sizes (B, T)."""
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)) or first.dim() != second.dim():
        return None
    named = {d: names.dim(a, b) for d, (a, b) in enumerate(zip(first.shape, second.shape))}
    return {d: name for d, name in named.items() if name in GROWTH} or None


Recorded = dict[int, tuple[tuple, dict, list | None]]


def record_children(
    instance: nn.Module,
    args: tuple,
    kwargs: dict,
    dims: list | None,
    wanted: set[type] | None = None,
    start: str = "meta",
    rebuild: Callable[[], nn.Module] | None = None,
) -> tuple[Recorded, BaseException | None]:
    """Per submodule: (args, kwargs, free dims of each input, positional then keyword) of its first
    call; with `wanted` (classes), at least for the first instance of each of those classes. And
    the error that stopped the parent's run, if any: the children called before it are still there.

    The parent runs on the cheapest tensors that can run it (levels/devices.py); a fake run's recordings come
    back as meta tensors (fake ones do not outlive their mode).
    Where the parent's inputs have free dims, a second run with those dims scaled up tells which of each
    child's dims follow them, so children read `(B, T, 32)` like their parent.
    """
    first, error, start = _recorded(instance, (args, kwargs), wanted, start, rebuild)
    if error is not None or not dims or not any(dims):
        return {key: (a, k, None) for key, (a, k) in first.items()}, error
    flat = (*args, *kwargs.values())
    names = SampledSizes(free_sizes(flat, dims))
    scaled = scale_up(flat, dims)
    second, _, _ = _recorded(
        instance, (scaled[: len(args)], dict(zip(kwargs, scaled[len(args) :]))), wanted, start, rebuild
    )
    result = {}
    for key, (a, k) in first.items():
        other_args, other_kwargs = second.get(key, ((), {}))
        mine, theirs = (*a, *k.values()), (*other_args, *other_kwargs.values())
        aligned = len(other_args) == len(a) and list(other_kwargs) == list(k)
        child_dims = [_free_dims(x, y, names) for x, y in zip(mine, theirs)] if aligned else None
        result[key] = (a, k, child_dims if child_dims and any(child_dims) else None)
    return result, None


# What a child receives is what it receives in an eager run: where meta cannot run the parent, CPU tensors
# (one repeated value per weight when the model is too big for real ones) before fake ones, on which
# libraries take their tracing path (transformers builds the 4-D attention mask an eager run skips).
RECORDING_KINDS = ("meta", "cpu", "fake")


def _recorded(
    instance: nn.Module,
    call: tuple[tuple, dict],
    wanted: set[type] | None,
    start: str,
    rebuild: Callable[[], nn.Module] | None,
) -> tuple[dict, BaseException | None, str]:
    """(calls, the error that stopped the run, the tensors it ran on): a run that fails keeps the calls
    made before the failure, from the last kind of tensors tried."""
    stopped: dict[str, Any] = {}

    def step(module: nn.Module, converted: tuple[tuple, dict]) -> dict:
        calls, error = _record_calls(module, converted[0], converted[1], wanted)
        if error is not None:
            stopped.update(calls=_outliving(calls), error=error)
            raise error  # devices.run tries the next kind of tensors when the error is the device's
        return calls

    try:
        ran = devices.run(
            step, instance, call, start, rebuild, kinds=RECORDING_KINDS, options=devices.RunOptions(weightless_cpu=True)
        )
    except Exception as error:  # noqa: BLE001  the user's forward: the parent's own trace reports it
        return stopped.get("calls", {}), stopped.get("error", error), start
    return _outliving(ran.value), None, ran.tensors


def _outliving(calls: dict) -> dict:
    """Recorded calls that outlive a fake run: its tensors as meta ones (a size known only at run time,
    `u0`, cannot be remade: those calls are dropped)."""
    if not any(_has_fake(call) for call in calls.values()):
        return calls
    return {key: devices.convert(call, "meta") for key, call in calls.items() if _static(call)}


def _has_fake(value: Any) -> bool:
    if isinstance(value, FakeTensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_fake(item) for item in value)
    if isinstance(value, dict):
        return any(_has_fake(item) for item in value.values())
    return False


def _static(value: Any) -> bool:
    """No size known only at run time (`u0`): such a tensor cannot be remade as a meta one."""
    if isinstance(value, torch.Tensor):
        return all(isinstance(s, int) for s in value.shape)
    if isinstance(value, (tuple, list)):
        return all(_static(item) for item in value)
    if isinstance(value, dict):
        return all(_static(item) for item in value.values())
    return True

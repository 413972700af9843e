"""Guess example inputs from the layers that consume each forward parameter; record real child inputs."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
import torch.fx as fx
from torch import nn

from fxlens.worker import devices, guesses
from fxlens.worker.values import GROWTH, SampledSizes, free_sizes, grow


@dataclass
class Inferred:
    """Example inputs that forward accepted (None: none did), with their free dims and the tensors they ran on."""

    inputs: Optional[tuple] = None
    dims: Optional[list] = None
    error: Optional[BaseException] = None
    tensors: str = "meta"
    reason: str = ""


def required_forward_params(instance: nn.Module) -> list[str]:
    signature = inspect.signature(instance.forward)
    return [p.name for p in signature.parameters.values()
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _options(instance: nn.Module, gm: Optional[fx.GraphModule], index: int, param: str) -> list[guesses.Input]:
    consumer = guesses.first_consumer(gm, instance, param) or (guesses.first_leaf(instance) if index == 0 else None)
    return guesses.by_name(param, instance, consumer) or guesses.by_layer(instance, consumer)


def infer_inputs(instance: nn.Module, gm: Optional[fx.GraphModule], start: str = "meta",
                 rebuild: Optional[Callable[[], nn.Module]] = None) -> Inferred:
    """Try each candidate rank until the module accepts the inputs, on the cheapest tensors that run it.

    The inputs kept are meta tensors, or the real CPU ones when only those ran (their values matter then)."""
    params = required_forward_params(instance)
    if not params:
        return Inferred((), [])
    per_param = []
    for index, param in enumerate(params):
        options = _options(instance, gm, index, param)
        if not options:
            return Inferred()
        per_param.append(options)
    last_error: Optional[BaseException] = None
    unconfirmed: Optional[Inferred] = None
    # all parameters try the same rank index together (forward(x, y) usually wants alike shapes)
    for rank_index in range(max(len(o) for o in per_param)):
        chosen = [options[min(rank_index, len(options) - 1)] for options in per_param]
        inputs = tuple(guesses.make(value) for value in chosen)
        dims = [guesses.dims_of(value) for value in chosen]
        try:
            ran = devices.run(_call, instance, inputs, start, rebuild)
        except devices.MetaDeviceLimit as limit:
            # no tensors fxlens may use could finish the run: keep the first such guess, so that export (which
            # needs no values) still reaches the code and shows what it makes of it
            unconfirmed = unconfirmed or Inferred(devices.convert(inputs, "meta"), dims, None, start,
                                                  f"{limit.summary}: these inputs are fxlens's guess, "
                                                  "unconfirmed by a whole run")
            continue
        except Exception as error:  # the user's forward rejecting this guess is expected
            last_error = error
            continue
        kept = inputs if ran.tensors == "cpu" else devices.convert(inputs, "meta")
        return Inferred(kept, dims, None, ran.tensors, ran.reason)
    return unconfirmed or Inferred(error=last_error)


def _call(module: nn.Module, inputs: tuple) -> None:
    with torch.no_grad():
        module(*inputs)


class _Enough(BaseException):
    """Every submodule asked about has been called: the rest of forward is not needed."""


def _record_calls(instance: nn.Module, inputs: tuple, wanted: Optional[set[str]] = None
                  ) -> dict[int, tuple[tuple, dict]]:
    """Run `instance` once and keep, per submodule, the first arguments it received.

    With `wanted` (class names), the run stops as soon as the first instance of each of those classes
    has been called: on a deep model that is the first layer, not all eighty."""
    calls: dict[int, tuple[tuple, dict]] = {}
    firsts: dict[str, int] = {}
    for path, sub in instance.named_modules():
        if path and wanted is not None and type(sub).__name__ in wanted:
            firsts.setdefault(type(sub).__name__, id(sub))
    awaited = set(firsts.values()) if wanted is not None else None

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        calls.setdefault(id(module), (args, kwargs))
        if awaited is not None and awaited <= calls.keys():
            raise _Enough

    handles = [sub.register_forward_pre_hook(hook, with_kwargs=True)
               for path, sub in instance.named_modules() if path]
    try:
        with torch.no_grad():
            instance(*inputs)
    except _Enough:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return calls


def _free_dims(first: Any, second: Any, names: SampledSizes) -> Optional[dict[int, str]]:
    """The dims of a child's tensor that are exactly one of the parent's free sizes (B, T)."""
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)) or first.dim() != second.dim():
        return None
    named = {d: names.dim(a, b) for d, (a, b) in enumerate(zip(first.shape, second.shape))}
    return {d: name for d, name in named.items() if name in GROWTH} or None


def record_children(instance: nn.Module, inputs: tuple, dims: Optional[list], wanted: Optional[set[str]] = None,
                    start: str = "meta", rebuild: Optional[Callable[[], nn.Module]] = None
                    ) -> dict[int, tuple[tuple, dict, Optional[list]]]:
    """Per submodule: (args, kwargs, free dims of each positional arg) of its first call; with `wanted`
    (class names), at least for the first instance of each of those classes.

    Where the parent's inputs have free dims, a second run with those dims grown tells which of each
    child's dims follow them, so children read `(B, T, 32)` like their parent. The parent runs on the
    tensors `start` names or the next kind that can run it (devices.py); what a fake run recorded comes
    back as meta tensors.
    """
    def recorded(inputs: tuple) -> tuple[dict, str]:
        ran = devices.run(lambda module, xs: _record_calls(module, xs, wanted), instance, inputs, start, rebuild)
        calls = ran.value
        if ran.tensors == "fake":
            calls = {key: devices.convert(call, "meta") for key, call in calls.items() if _static(call)}
        return calls, ran.tensors

    first, tensors = recorded(inputs)
    start = tensors
    if not dims or not any(dims):
        return {key: (args, kwargs, None) for key, (args, kwargs) in first.items()}
    names = SampledSizes(free_sizes(inputs, dims))
    second, _ = recorded(grow(inputs, dims))
    result = {}
    for key, (args, kwargs) in first.items():
        other_args = second.get(key, ((), {}))[0]
        child_dims = [_free_dims(a, b, names) for a, b in zip(args, other_args)] if len(other_args) == len(args) else None
        result[key] = (args, kwargs, child_dims if child_dims and any(child_dims) else None)
    return result


def _static(value: Any) -> bool:
    """No size known only at run time (`u0`): such a tensor cannot be remade as a meta one."""
    if isinstance(value, torch.Tensor):
        return all(isinstance(s, int) for s in value.shape)
    if isinstance(value, (tuple, list)):
        return all(_static(item) for item in value)
    if isinstance(value, dict):
        return all(_static(item) for item in value.values())
    return True

"""Guess example inputs from the layers that consume each forward parameter; record real child inputs."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._pytree import tree_map

from fxlens.worker.construction import guess_inputs
from fxlens.worker.levels import devices
from fxlens.worker.levels.values import GROWTH, SampledSizes, free_sizes, scale_up


@dataclass
class Inferred:
    """Example inputs that forward accepted (None: none did), with their free dims and the tensors they ran on."""

    inputs: tuple | None = None
    dims: list | None = None
    error: BaseException | None = None
    tensors: str = "meta"
    reason: str = ""
    # keyword-only parameters of forward (`forward(self, x, *, mask)`) get their inputs by name
    kwargs: dict = field(default_factory=dict)
    # per input, positional then keyword: where its guess comes from ("first used by Linear")
    reasons: list = field(default_factory=list)


def _parameters(instance: nn.Module, required: bool = False) -> list[str]:
    signature = inspect.signature(instance.forward)
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and (p.default is inspect.Parameter.empty or not required)
    ]


def _keyword_only(instance: nn.Module) -> list[str]:
    """forward's required keyword-only parameters: they come after the positional ones."""
    signature = inspect.signature(instance.forward)
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind == p.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]


def required_forward_params(instance: nn.Module) -> list[str]:
    return _parameters(instance, required=True) + _keyword_only(instance)


def guessed_params(instance: nn.Module) -> list[str]:
    """The parameters inference gives a value: the required ones, else (HF's `input_ids=None`) the first."""
    try:
        return required_forward_params(instance) or _parameters(instance)[:1]
    except (TypeError, ValueError):
        return []


def _runs_on_defaults(instance: nn.Module, start: str, rebuild: Callable[[], nn.Module] | None) -> bool:
    """Whether forward runs with every parameter left to its default (a code limit of fxlens's tensors
    counts as running: the levels say what they make of it)."""
    try:
        devices.run(_call, instance, ((), {}), start, rebuild)
    except devices.MetaDeviceLimit:
        return True
    except Exception:  # noqa: BLE001  the user's forward needs an argument after all
        return False
    return True


def _options(instance: nn.Module, graph: fx.Graph | None, index: int, param: str) -> list[guess_inputs.Input]:
    consumer = guess_inputs.first_consumer(graph, instance, param)
    named = guess_inputs.labelled(guess_inputs.by_name(param, instance, consumer), f"by its name `{param}`")
    if named:
        return named
    if consumer is None and index == 0:  # the trace stopped before the input reached a layer
        return guess_inputs.labelled(
            guess_inputs.every_kind_of_leaf(instance),
            "the trace stopped before it reached a layer: the first layers' shapes",
        )
    if consumer is None:
        return []
    return guess_inputs.labelled(
        guess_inputs.by_layer(instance, consumer), f"first used by {type(consumer.layer).__name__}"
    )


_NO_CACHE = (
    "the forward as trained, without the generation cache: its cache object is no tensor, "
    "which torch.export cannot take or return"
)


def _without_cache(instance: nn.Module) -> dict:
    """`use_cache=False` for a forward that has the flag (HuggingFace and the models written like them)."""
    try:
        return {"use_cache": False} if "use_cache" in inspect.signature(instance.forward).parameters else {}
    except (TypeError, ValueError):
        return {}


def infer_inputs(
    instance: nn.Module, graph: fx.Graph | None, start: str = "meta", rebuild: Callable[[], nn.Module] | None = None
) -> Inferred:
    """Try each candidate rank until the module accepts the inputs, on the cheapest tensors that run it.

    The inputs kept are meta tensors, or the real CPU ones when only those ran (their values matter then)."""
    params = required_forward_params(instance)
    if not params:
        if _runs_on_defaults(instance, start, rebuild):
            return Inferred((), [])
        # HF-style `forward(self, input_ids=None, ...)`: the defaults alone do not run, so the first
        # parameter is the input
        optional = _parameters(instance)
        # an encoder-decoder's forward (`input_ids=None, ..., decoder_input_ids=None`) needs both sequences
        params = optional[:1] + [p for p in optional[1:] if guess_inputs.is_decoder_input(p)]
        if not params:
            return Inferred((), [])
    per_param: list[list[guess_inputs.Input]] = []
    for index, param in enumerate(params):
        options = _options(instance, graph, index, param)
        per_param.append(options or guess_inputs.unconsumed(per_param[0] if per_param else [], param, params[0]))
    found = _first_that_runs(instance, params, per_param, start, rebuild)
    # a parameter that defaults to None but that forward uses all the same (`temb=None` of a block whose
    # layers were built for a time embedding): given a value, one at a time, while the error is a None's
    for extra in _none_defaults(instance, params):
        if found.inputs is not None or not _none_used(found.error):
            break
        options = _options(instance, graph, len(params), extra) or guess_inputs.labelled(
            guess_inputs.every_kind_of_leaf(instance),
            f"`{extra}` defaults to None, but forward uses it: the first layers' shapes",
        )
        params = [*params, extra]
        for option in options:
            tried = _first_that_runs(instance, params, [*per_param, [option]], start, rebuild)
            if tried.inputs is not None or not _none_used(tried.error):
                found = tried
                if tried.inputs is not None:
                    break
        per_param = [*per_param, options[:1]]
    return found


def _none_defaults(instance: nn.Module, params: list[str]) -> list[str]:
    try:
        signature = inspect.signature(instance.forward)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is None
        and p.name not in params
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _none_used(error: BaseException | None) -> bool:
    """Whether the run failed on a None where a value was needed (`silu(): ... not NoneType`)."""
    return isinstance(error, (TypeError, AttributeError)) and "NoneType" in str(error)


# other image sides, tried when the guessed side did not run: larger ones when it was too small for the
# network's downsampling (a plane, ImageNet's), the common ones when a fixed positional table was built
# for another side (CIFAR's too)
_LARGER_SIDES = (64, 224)
_COMMON_SIDES = (32, 64, 224)
_TOO_SMALL = (
    "Output size is too small",
    "Expected more than 1 spatial element",
    "can't be greater than actual input size",
)
_NOT_ITS_SIDE = ("must match the size of tensor", "Attempting to broadcast a dimension", "is invalid for input of size")


def _first_that_runs(
    instance: nn.Module,
    params: list[str],
    per_param: list[list[guess_inputs.Input]],
    start: str,
    rebuild: Callable[[], nn.Module] | None,
) -> Inferred:
    found = _first_rank_that_runs(instance, params, per_param, start, rebuild)
    too_small = any(text in str(found.error) for text in _TOO_SMALL)
    for side in _LARGER_SIDES if too_small else _COMMON_SIDES:
        if found.inputs is not None or not (too_small or any(text in str(found.error) for text in _NOT_ITS_SIDE)):
            break
        why = "smaller images vanish in its downsampling" if too_small else "the first side its shapes fit"
        resided = [[guess_inputs.with_side(value, side, why) for value in options] for options in per_param]
        if resided == per_param:
            break  # no image among the guesses
        found = _first_rank_that_runs(instance, params, resided, start, rebuild)
    # forward's own error names the size it wants ("expects ... length 3000, but found 16"): once per size
    for _ in range(len(params)):
        named = guess_inputs.named_size(found.error) if found.inputs is None else None
        resized = (
            [[guess_inputs.with_size(value, *named) for value in options] for options in per_param]
            if named
            else per_param
        )
        if resized == per_param:
            break
        per_param = resized
        found = _first_rank_that_runs(instance, params, per_param, start, rebuild)
    return found


_MAX_CHOICES = 24


def _choices(per_param: list[list[guess_inputs.Input]]) -> list[list[guess_inputs.Input]]:
    """The guesses to try, one per parameter: all at the same rank index first (forward(x, y) usually wants
    alike shapes), then, at each rank, one parameter at a time at its other ranks (`x` as (B, T, C) beside
    a per-sample `t_emb` as (B, C))."""
    ranks = range(max(len(o) for o in per_param))
    alike = [[options[min(rank, len(options) - 1)] for options in per_param] for rank in ranks]
    found, seen = [], set()
    for chosen in alike + [
        [*base[:i], other, *base[i + 1 :]]
        for base in alike
        for i, options in enumerate(per_param)
        if len(per_param) > 1
        for other in options
    ]:
        key = tuple(map(id, chosen))
        if key not in seen:
            seen.add(key)
            found.append(chosen)
    return found[:_MAX_CHOICES]


def _first_rank_that_runs(
    instance: nn.Module,
    params: list[str],
    per_param: list[list[guess_inputs.Input]],
    start: str,
    rebuild: Callable[[], nn.Module] | None,
) -> Inferred:
    # the leading parameters in forward's own order go by position, the others (keyword-only ones, a
    # decoder's input after skipped optional ones) by name
    order = _parameters(instance)
    positional = next((i for i, p in enumerate(params) if i >= len(order) or order[i] != p), len(params))
    uncached = _without_cache(instance)
    last_error: BaseException | None = None
    unconfirmed: Inferred | None = None
    for chosen in _choices(per_param):
        made = [guess_inputs.make(value) for value in chosen]
        inputs = (tuple(made[:positional]), {**dict(zip(params[positional:], made[positional:])), **uncached})
        dims = [guess_inputs.dims_of(value) for value in chosen] + [None] * len(uncached)
        reasons = [guess_inputs.why_of(value) for value in chosen] + [_NO_CACHE] * len(uncached)
        try:
            ran = devices.run(_call, instance, inputs, start, rebuild)
        except devices.MetaDeviceLimit as limit:
            # no tensors fxlens may use could finish the run: keep the first such guess, so that export (which
            # needs no values) still reaches the code and shows what it makes of it
            args, kwargs = devices.convert(inputs, "meta")
            unconfirmed = unconfirmed or Inferred(
                args,
                dims,
                None,
                start,
                f"{limit.summary}: these inputs are fxlens's guess, unconfirmed by a whole run",
                kwargs,
                reasons,
            )
            continue
        except Exception as error:  # noqa: BLE001  the user's forward rejecting this guess is expected
            # a None used is kept over later errors: the guess got far enough to need a parameter left out
            last_error = last_error if _none_used(last_error) else error
            continue
        args, kwargs = inputs if ran.tensors == "cpu" else devices.convert(inputs, "meta")
        return Inferred(args, dims, None, ran.tensors, ran.reason, kwargs, reasons)
    return unconfirmed or Inferred(error=last_error)


def _call(module: nn.Module, inputs: tuple) -> None:
    args, kwargs = inputs
    with torch.no_grad():
        module(*args, **kwargs)


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

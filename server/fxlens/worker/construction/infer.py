"""Guess example inputs from the layers that consume each forward parameter (recording.py records real child
inputs)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import nn

from fxlens.worker.construction import (
    code_sizes,
    consumers,
    forward_uses,
    guess_inputs,
    resized,
    solve_shapes,
    structured,
)
from fxlens.worker.levels import devices


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


def _target(instance: nn.Module) -> Callable[..., Any]:
    """The function whose parameters forward's inputs fill: forward, or the method a `forward(*args, **kwargs)`
    hands them all to (`self.forward_features(*args, **kwargs)`)."""
    return forward_uses.handed_on(instance) or instance.forward


def _parameters(instance: nn.Module, required: bool = False) -> list[str]:
    signature = inspect.signature(_target(instance))
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and (p.default is inspect.Parameter.empty or not required)
    ]


def _keyword_only(instance: nn.Module) -> list[str]:
    """forward's required keyword-only parameters: they come after the positional ones."""
    signature = inspect.signature(_target(instance))
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
    consumer = consumers.first_consumer(graph, instance, param)
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
    # what the file's own code hands to the class comes first (positional inputs, in forward's order)
    in_code = code_sizes.inputs_in_code(type(instance)) or []
    target = _target(instance)
    uses = forward_uses.uses(target)
    for index, param in enumerate(params):
        options = _options(instance, graph, index, param)
        options = options or guess_inputs.unconsumed(per_param[0] if per_param else [], param, params[0])
        options = structured.shaped(instance, uses, param, options, structured.required(target, param))
        read = in_code[index] if index < len(in_code) else None
        per_param.append([read, *options] if read is not None else options)
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
        signature = inspect.signature(_target(instance))
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
    if found.inputs is None and found.error is not None and not _none_used(found.error):
        found = _solved(instance, params, per_param, start, rebuild) or found
    too_small = any(text in str(found.error) for text in _TOO_SMALL)
    for side in _LARGER_SIDES if too_small else _COMMON_SIDES:
        if found.inputs is not None or not (too_small or any(text in str(found.error) for text in _NOT_ITS_SIDE)):
            break
        why = "smaller images vanish in its downsampling" if too_small else "the first side its shapes fit"
        resided = [[resized.with_side(value, side, why) for value in options] for options in per_param]
        if resided == per_param:
            break  # no image among the guesses
        found = _first_rank_that_runs(instance, params, resided, start, rebuild)
    # forward's own error names the size it wants ("expects ... length 3000, but found 16"): once per size
    for _ in range(len(params)):
        named = resized.named_size(found.error) if found.inputs is None else None
        sized = (
            [[resized.with_size(value, *named) for value in options] for options in per_param] if named else per_param
        )
        if sized == per_param:
            break
        per_param = sized
        found = _first_rank_that_runs(instance, params, per_param, start, rebuild)
    return found


_MAX_CHOICES = 24
# the guesses whose sizes are solved when none ran as guessed (each costs a few symbolic fake runs)
_SOLVED_CHOICES = 4
# the most time solving may add to a class none of whose guesses ran (a fake run of a large model takes seconds)
_SOLVING_SECONDS = 15.0


def _solved(
    instance: nn.Module,
    params: list[str],
    per_param: list[list[guess_inputs.Input]],
    start: str,
    rebuild: Callable[[], nn.Module] | None,
) -> Inferred | None:
    """The first guesses whose sizes forward's own checks pin (solve_shapes.py), run as any guess is."""
    positional, uncached = _split(instance, params)

    def call(module: nn.Module, made: tuple) -> None:
        module(*made[:positional], **dict(zip(params[positional:], made[positional:])), **uncached)

    deadline = time.monotonic() + _SOLVING_SECONDS
    for chosen in _choices(per_param)[:_SOLVED_CHOICES]:
        if time.monotonic() > deadline:
            break
        try:
            solved = solve_shapes.solve(instance, chosen, call)
        except Exception:  # noqa: BLE001  torch's symbolic machinery failing on this code: the guesses stay as they are
            continue
        if solved is None:
            continue
        found = _first_rank_that_runs(instance, params, [[value] for value in solved.values], start, rebuild)
        if found.inputs is not None:
            return found
    return None


def _split(instance: nn.Module, params: list[str]) -> tuple[int, dict]:
    """How many of `params` go by position (the leading ones in forward's own order; the others, keyword-only
    ones or a decoder's input after skipped optional ones, by name), and the `use_cache=False` to add."""
    order = _parameters(instance)
    positional = next((i for i, p in enumerate(params) if i >= len(order) or order[i] != p), len(params))
    return positional, _without_cache(instance)


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
    positional, uncached = _split(instance, params)
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

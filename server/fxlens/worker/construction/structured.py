"""Guesses shaped by how forward uses a parameter (forward_uses.py): ints its annotation asks for, a tuple of the
items it is unpacked into, one tensor per layer of a list walked beside a list of layers,
a dict of the keys it is read by, None first for an Optional one forward checks, the rank its first uses fix
and a mask's dtype."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from fxlens.worker.construction import guess_inputs
from fxlens.worker.construction.build import BATCH, SEQUENCE, SPATIAL
from fxlens.worker.construction.consumers import Consumer
from fxlens.worker.construction.forward_uses import Use
from fxlens.worker.construction.guess_inputs import Guess, Input, Plain


def shaped(instance: nn.Module, uses: dict[str, Use], param: str, options: list[Input], required: bool) -> list[Input]:
    """The guesses for `param` as its uses shape them (unchanged when its source says nothing)."""
    use = uses.get(param)
    if use is None:
        return options
    if use.ints is not None:  # `size: Tuple[int, int]`: a size of the guessed images' side, no tensor
        value = SPATIAL if use.ints == 0 else (SPATIAL,) * use.ints
        options = [Plain(value, f"annotated with ints: {value!r}")]
    elif use.items:
        items = _alike(instance, [uses.get(f"{param}.{item}") for item in use.items], use.items)
        pairs = [v for v in options if isinstance(v, tuple) and len(v) == len(use.items)]  # an LSTM's `(h, c)`
        options = [*pairs, *(tuple(_at(choices, rank) for choices in items) for rank in range(max(map(len, items))))]
    elif _per_layer(instance, use):
        items = [_first_leaf(instance, layer, f"{param}[{i}]") for i, layer in enumerate(_per_layer(instance, use))]
        options = [tuple(_at(choices, rank) for choices in items) for rank in range(max(map(len, items)))]
    elif use.keys:
        keyed = dict(zip(use.keys, _alike(instance, [uses.get(f"{param}[{key}]") for key in use.keys], use.keys)))
        longest = max(map(len, keyed.values()))
        options = [{key: _at(choices, rank) for key, choices in keyed.items()} for rank in range(longest)]
    else:
        options = _ranked(use, options)
        if use.index and use.dtype is None:
            options = [*_positions(), *(_as_ids(v, torch.long) if isinstance(v, Guess) else v for v in options)]
    return [None, *options] if use.optional and required else options


_INDEXES = "it selects rows of a table: positions"


def _positions() -> list[Input]:
    """An index into a table (`self.rope[input_pos]`): the positions of a sequence, then of a batch of them."""
    return [
        Guess((SEQUENCE,), torch.long, {0: "T"}, fill="positions", why=_INDEXES),
        Guess((BATCH, SEQUENCE), torch.long, {0: "B", 1: "T"}, fill="positions", why=_INDEXES),
    ]


def _per_layer(instance: nn.Module, use: Use) -> list[nn.Module]:
    """The layers the items are walked beside (`zip(self.lateral, features)`), when each has a guess."""
    layers = getattr(instance, use.layers, None) if use.layers else None
    if not isinstance(layers, (nn.ModuleList, nn.Sequential)) or not len(layers):
        return []
    return list(layers) if all(_first_leaf(instance, layer, "") for layer in layers) else []


def _first_leaf(instance: nn.Module, layer: nn.Module, name: str) -> list[Guess]:
    """The guesses of the first layer inside `layer` (itself when a leaf) that has any."""
    for inner in layer.modules():
        found = guess_inputs.by_layer(instance, Consumer(inner))
        if found:
            why = f"`{name}` first used by {type(inner).__name__}"
            return [value for value in guess_inputs.labelled(found, why) if isinstance(value, Guess)]
    return []


def _at(choices: list[Guess], rank: int) -> Guess:
    return choices[min(rank, len(choices) - 1)]


def _alike(instance: nn.Module, uses: list[Use | None], names: list[str]) -> list[list[Guess]]:
    """Each item's guesses: by the layer it is handed to; an item no layer takes is shaped like the first one a
    layer takes (items that travel together share their leading sizes: clicks' coordinates and labels), then
    as a small float tensor."""
    by_layer = [_by_layer(instance, use, name) for use, name in zip(uses, names)]
    lead = next((found for found in by_layer if found), [])
    alike = [
        Guess((*g.shape, 16) if g.fill == "ids" else g.shape, dims=g.dims, why=f"no layer takes it: like {g.why}")
        for g in lead
    ]
    small = [value for value in guess_inputs.unconsumed([], "", "") if isinstance(value, Guess)]
    return [
        [value for value in _ranked(use, found or [*alike, *small]) if isinstance(value, Guess)]
        if use is not None
        else found or [*alike, *small]
        for found, use in zip(by_layer, uses)
    ]


def _by_layer(instance: nn.Module, use: Use | None, name: str) -> list[Guess]:
    layer = getattr(instance, use.layer, None) if use is not None and use.layer else None
    if not isinstance(layer, nn.Module):
        return []
    found = guess_inputs.labelled(
        guess_inputs.by_layer(instance, Consumer(layer)), f"`{name}` first used by {type(layer).__name__}"
    )
    return [value for value in found if isinstance(value, Guess)]


def _ranked(use: Use, options: Sequence[Input]) -> list[Input]:
    """The guesses at the rank the uses fix (those of that rank; else the others with the leading batch dropped
    or a sequence added after it) and of a mask's dtype."""
    found = list(options)
    if use.rank is not None:
        exact = [value for value in found if not isinstance(value, Guess) or len(value.shape) == use.rank]
        ranked = [_to_rank(value, use.rank) if isinstance(value, Guess) else value for value in found]
        found = (
            exact
            if any(isinstance(v, Guess) for v in exact)
            else [value for value in ranked if not isinstance(value, Guess) or len(value.shape) == use.rank] or found
        )
    if use.dtype is torch.bool:
        found = [replace(v, dtype=torch.bool, fill="ones") if isinstance(v, Guess) else v for v in found]
    elif use.dtype is not None:  # integer tensors: ids, in range of a table when a layer said which
        found = [_as_ids(v, use.dtype) if isinstance(v, Guess) else v for v in found]
    return found


def _as_ids(value: Guess, dtype: torch.dtype) -> Guess:
    if value.fill == "ids":
        return replace(value, dtype=dtype)
    return replace(value, dtype=dtype, fill="ids", high=2)


def _to_rank(value: Guess, rank: int) -> Guess:
    why = f"{value.why}; rank {rank} as forward uses it".lstrip("; ")
    if len(value.shape) == rank + 1:  # the code adds the batch itself (`q.unsqueeze(0).repeat(B, 1, 1)`)
        dims = {d - 1: name for d, name in value.dims.items() if d > 0}
        return replace(value, shape=value.shape[1:], dims=dims, why=why)
    if len(value.shape) == rank - 1 and value.shape:  # a sequence after the batch
        dims = {d + (d > 0): name for d, name in value.dims.items()}
        if "T" not in dims.values():
            dims[1] = "T"
        return replace(value, shape=(value.shape[0], SEQUENCE, *value.shape[1:]), dims=dims, why=why)
    return value


def required(function: object, param: str) -> bool:
    try:
        found = inspect.signature(function).parameters.get(param)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return found is not None and found.default is inspect.Parameter.empty

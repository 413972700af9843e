"""Guess example inputs from the layers that consume each forward parameter; record real child inputs."""
from __future__ import annotations

import inspect
from typing import Any, Optional

import torch
import torch.fx as fx
from torch import nn

from fxlens.worker.build import BATCH, SEQUENCE, SPATIAL
from fxlens.worker.values import GROWTH, SampledSizes, grow

Candidate = tuple[tuple[int, ...], torch.dtype, dict[int, str]]


def _candidates(layer: Optional[nn.Module]) -> list[Candidate]:
    """Input shapes this layer accepts, lowest rank first, with the free (batch/sequence) dims named."""
    float_ = torch.float32
    if isinstance(layer, (nn.Embedding, nn.EmbeddingBag)):
        return [((BATCH, SEQUENCE), torch.long, {0: "B", 1: "T"}), ((BATCH,), torch.long, {0: "B"})]
    if isinstance(layer, nn.Linear):
        n = layer.in_features
        return [((BATCH, n), float_, {0: "B"}), ((BATCH, SEQUENCE, n), float_, {0: "B", 1: "T"}),
                ((BATCH, SEQUENCE, SEQUENCE, n), float_, {0: "B", 1: "T"})]
    if isinstance(layer, nn.modules.conv._ConvNd):
        rank = len(layer.kernel_size)
        return [((BATCH, layer.in_channels, *[SPATIAL] * rank), float_, {0: "B"})]
    if isinstance(layer, nn.LayerNorm):
        ns = tuple(layer.normalized_shape)
        return [((BATCH, *ns), float_, {0: "B"}), ((BATCH, SEQUENCE, *ns), float_, {0: "B", 1: "T"})]
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        c = layer.num_features
        extra = {nn.BatchNorm1d: [(), (SPATIAL,)], nn.BatchNorm2d: [(SPATIAL, SPATIAL)],
                 nn.BatchNorm3d: [(SPATIAL,) * 3]}.get(type(layer), [()])
        return [((BATCH, c, *rest), float_, {0: "B"}) for rest in extra]
    if isinstance(layer, nn.RNNBase):
        if layer.batch_first:
            return [((BATCH, SEQUENCE, layer.input_size), float_, {0: "B", 1: "T"})]
        return [((SEQUENCE, BATCH, layer.input_size), float_, {0: "T", 1: "B"})]
    if isinstance(layer, nn.MultiheadAttention):
        e = layer.embed_dim
        if layer.batch_first:
            return [((BATCH, SEQUENCE, e), float_, {0: "B", 1: "T"})]
        return [((SEQUENCE, BATCH, e), float_, {0: "T", 1: "B"})]
    return []


def _first_consumer(gm: Optional[fx.GraphModule], root: nn.Module, param: str) -> Optional[nn.Module]:
    """The first leaf module the parameter flows into, following the graph breadth-first."""
    if gm is None:
        return None
    start = next((n for n in gm.graph.nodes if n.op == "placeholder" and n.target == param), None)
    frontier, seen = [start] if start is not None else [], set()
    while frontier:
        node = frontier.pop(0)
        if node in seen:
            continue
        seen.add(node)
        if node.op == "call_module":
            return root.get_submodule(node.target)
        frontier.extend(node.users)
    return None


def _first_leaf(root: nn.Module) -> Optional[nn.Module]:
    return next((m for m in root.modules() if _candidates(m)), None)


def required_forward_params(instance: nn.Module) -> list[str]:
    signature = inspect.signature(instance.forward)
    return [p.name for p in signature.parameters.values()
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def infer_inputs(instance: nn.Module, gm: Optional[fx.GraphModule], device: str
                 ) -> tuple[Optional[tuple], Optional[list], Optional[BaseException]]:
    """(inputs, dims, last error): try each candidate rank until the module accepts the inputs."""
    params = required_forward_params(instance)
    if not params:
        return (), [], None
    per_param = []
    for index, param in enumerate(params):
        layer = _first_consumer(gm, instance, param) or (_first_leaf(instance) if index == 0 else None)
        options = _candidates(layer)
        if not options:
            return None, None, None
        per_param.append(options)
    last_error: Optional[BaseException] = None
    # all parameters try the same rank index together (forward(x, y) usually wants alike shapes)
    for rank_index in range(max(len(o) for o in per_param)):
        chosen = [options[min(rank_index, len(options) - 1)] for options in per_param]
        inputs = tuple(_make(shape, dtype, device) for shape, dtype, _ in chosen)
        try:
            with torch.no_grad():
                instance(*inputs)
        except Exception as error:  # the user's forward rejecting this guess is expected
            last_error = error
            continue
        return inputs, [dims for _, _, dims in chosen], None
    return None, None, last_error


def _make(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    if dtype == torch.long:
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.randn(shape, dtype=dtype, device=device)


class _Enough(BaseException):
    """Every submodule asked about has been called: the rest of forward is not needed."""


def _record_calls(instance: nn.Module, args: tuple, kwargs: dict, wanted: Optional[set[type]] = None
                  ) -> tuple[dict[int, tuple[tuple, dict]], Optional[BaseException]]:
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
        calls.setdefault(id(module), (args, kwargs))
        if awaited is not None and awaited <= calls.keys():
            raise _Enough

    handles = [sub.register_forward_pre_hook(hook, with_kwargs=True)
               for path, sub in instance.named_modules() if path]
    error: Optional[BaseException] = None
    try:
        with torch.no_grad():
            instance(*args, **kwargs)
    except _Enough:
        pass
    except Exception as failure:  # the user's forward: the parent's own trace reports it
        error = failure
    finally:
        for handle in handles:
            handle.remove()
    return calls, error


def _free_dims(first: Any, second: Any, names: SampledSizes) -> Optional[dict[int, str]]:
    """The dims of a child's tensor that are exactly one of the parent's free sizes (B, T)."""
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)) or first.dim() != second.dim():
        return None
    named = {d: names.dim(a, b) for d, (a, b) in enumerate(zip(first.shape, second.shape))}
    return {d: name for d, name in named.items() if name in GROWTH} or None


Recorded = dict[int, tuple[tuple, dict, Optional[list]]]


def record_children(instance: nn.Module, args: tuple, kwargs: dict, dims: Optional[list],
                    wanted: Optional[set[type]] = None) -> tuple[Recorded, Optional[BaseException]]:
    """Per submodule: (args, kwargs, free dims of each input, positional then keyword) of its first
    call; with `wanted` (classes), at least for the first instance of each of those classes. And
    the error that stopped the parent's run, if any: the children called before it are still there.

    Where the parent's inputs have free dims, a second run with those dims grown tells which of each
    child's dims follow them, so children read `(B, T, 32)` like their parent.
    """
    first, error = _record_calls(instance, args, kwargs, wanted)
    if error is not None or not dims or not any(dims):
        return {key: (a, k, None) for key, (a, k) in first.items()}, error
    flat = (*args, *kwargs.values())
    names = SampledSizes({name: int(flat[i].shape[d]) for i, free in enumerate(dims) if free
                          for d, name in free.items()})
    grown = grow(flat, dims)
    second, _ = _record_calls(instance, grown[:len(args)], dict(zip(kwargs, grown[len(args):])), wanted)
    result = {}
    for key, (a, k) in first.items():
        other_args, other_kwargs = second.get(key, ((), {}))
        mine, theirs = (*a, *k.values()), (*other_args, *other_kwargs.values())
        aligned = len(other_args) == len(a) and list(other_kwargs) == list(k)
        child_dims = [_free_dims(x, y, names) for x, y in zip(mine, theirs)] if aligned else None
        result[key] = (a, k, child_dims if child_dims and any(child_dims) else None)
    return result, None

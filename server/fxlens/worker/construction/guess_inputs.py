"""Example inputs a forward parameter plausibly takes, by the layer that first consumes it and by its name.

A guess is made as a small real CPU tensor with deterministic values (ids in range of the embedding
table, masks of ones): fxlens runs it on meta, fake or CPU tensors (see levels/devices.py) as the code needs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from fxlens.worker.construction.build import BATCH, SEQUENCE, SPATIAL
from fxlens.worker.construction.consumers import Consumer
from fxlens.worker.levels.memory_bound import cannot_allocate


@dataclass(frozen=True)
class Guess:
    """One tensor input: its shape, dtype, free dims ({dim: "B"}) and how its values are filled."""

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    dims: dict[int, str] = field(default_factory=dict)
    fill: str = "normal"  # "normal" | "ids" (in [0, high)) | "ones" | "zeros" | "positions" (0..n-1 on the last dim)
    high: int = 1
    # where the guess comes from, as the user reads it ("first used by Linear"); not part of its identity
    why: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # sizes are read off the user's layers, whose attributes may be numpy or other int-likes
        # (`nn.Linear(np.prod(shape), 64)` works in torch); torch's own APIs want plain ints
        object.__setattr__(self, "shape", tuple(operator.index(size) for size in self.shape))
        object.__setattr__(self, "high", operator.index(self.high))

    def tensor(self) -> torch.Tensor:
        """The CPU tensor; a meta one when the CPU cannot hold it (only meta or fake tensors could run such a
        model anyway, and export needs no values)."""
        try:
            return self._on_cpu()
        except (RuntimeError, MemoryError) as error:
            if not cannot_allocate(error):
                raise
            return torch.empty(self.shape, dtype=self.dtype, device="meta")

    def _on_cpu(self) -> torch.Tensor:
        count = 1
        for size in self.shape:
            count *= size
        if self.fill == "ids":
            return (torch.arange(count) % max(self.high, 1)).reshape(self.shape).to(self.dtype)
        if self.fill == "positions":
            return torch.arange(self.shape[-1]).expand(self.shape).to(self.dtype).contiguous()
        if self.fill in ("ones", "zeros"):
            return getattr(torch, self.fill)(self.shape, dtype=self.dtype)
        generator = torch.Generator().manual_seed(len(self.shape) * 1000 + count)
        return torch.randn(self.shape, generator=generator).to(self.dtype)


@dataclass(frozen=True)
class Plain:
    """An input that is no tensor: a Python value forward's annotation asks for (`size: Tuple[int, int]`)."""

    value: Any
    why: str = field(default="", compare=False)


# an input is one tensor, a tuple of them (an LSTM's `(h, c)`, a pair unpacked by forward), a dict of them by the
# keys forward reads, a plain value, or None (an Optional argument forward checks for None)
Input = Guess | tuple[Guess, ...] | dict[str, Guess] | Plain | None
NONE_FIRST = "forward checks it for None: None first"


def make(value: Input) -> Any:
    if value is None:
        return None
    if isinstance(value, Plain):
        return value.value
    if isinstance(value, dict):
        return {key: item.tensor() for key, item in value.items()}
    return tuple(make(item) for item in value) if isinstance(value, tuple) else value.tensor()


def dims_of(value: Input) -> Any:
    """The free dims: a tuple's per tensor; none for a dict's (its sizes stay as guessed), a plain value or a None."""
    if value is None or isinstance(value, (dict, Plain)):
        return None
    return [item.dims for item in value] if isinstance(value, tuple) else value.dims


def why_of(value: Input) -> str:
    if value is None:
        return NONE_FIRST
    if isinstance(value, Plain):
        return value.why
    if isinstance(value, dict):
        return next(iter(value.values())).why if value else ""
    return (value[0].why if value else "") if isinstance(value, tuple) else value.why


def each(value: Input, change: Callable[[Guess], Guess]) -> Input:
    """`change` made to the guess, or to each guess of the tuple or dict."""
    if value is None or isinstance(value, Plain):
        return value
    if isinstance(value, dict):
        return {key: change(item) for key, item in value.items()}
    return tuple(change(item) for item in value) if isinstance(value, tuple) else change(value)


def labelled(values: list[Input], why: str) -> list[Input]:
    """The guesses, each saying `why` unless it already says where it comes from."""

    def one(value: Guess) -> Guess:
        return value if value.why else replace(value, why=why)

    return [each(value, one) for value in values]


def unconsumed(sibling: list[Input], param: str, first_param: str) -> list[Input]:
    """A parameter nothing in forward feeds to a layer (it is only measured, reduced, added or passed
    on): shaped like the first parameter's guesses (inputs that meet usually broadcast), then a small
    float tensor."""
    alike: list[Input] = (
        []
        if param == first_param
        else labelled(
            [replace(v, why="") if isinstance(v, Guess) else v for v in sibling if isinstance(v, Guess)],
            f"no layer consumes it: shaped like `{first_param}`",
        )
    )
    small = "no layer consumes it: a small float tensor"
    return [
        *alike,
        Guess((BATCH, 16), dims={0: "B"}, why=small),
        Guess((BATCH, SEQUENCE, 16), dims={0: "B", 1: "T"}, why=small),
        # a sequence split into heads (`q.view(B, T, H, D)` handed to a rotary function)
        Guess((BATCH, SEQUENCE, 4, 16), dims={0: "B", 1: "T"}, why=small),
    ]


def _layout(rnn: nn.RNNBase | None) -> tuple[tuple[int, int], dict[int, str]]:
    """(batch, sequence) sizes in the order the RNN reads them, and their names."""
    if rnn is not None and not rnn.batch_first:
        return (SEQUENCE, BATCH), {0: "T", 1: "B"}
    return (BATCH, SEQUENCE), {0: "B", 1: "T"}


# attributes that say the sequence length a model was built for, when it adds a fixed positional table
_CONTEXT_NAMES = ("context_length", "n_ctx", "seq_len", "max_seq_len", "block_size")
_LONGEST_DECLARED = 4096


def _declared(root: nn.Module, names: tuple[str, ...]) -> Any:
    """The first of `names` set on any submodule or its `config` (`self.context_length`, `config.n_ctx`)."""
    for module in root.modules():
        for holder in (module, getattr(module, "config", None)):
            for name in names:
                value = getattr(holder, name, None) if holder is not None else None
                if value is not None and not isinstance(value, bool):
                    return value
    return None


def _ids(table: nn.Embedding | nn.EmbeddingBag, rnn: nn.RNNBase | None, root: nn.Module | None = None) -> list[Input]:
    """Token ids: (B, T) in the RNN's layout, then (B,), then the context length the model declares (CLIP
    adds a positional table of exactly that length)."""
    sizes, names = _layout(rnn)
    high = table.num_embeddings
    found: list[Input] = [
        Guess(sizes, torch.long, names, "ids", high),
        Guess((BATCH,), torch.long, {0: "B"}, "ids", high),
    ]
    context = _declared(root, _CONTEXT_NAMES) if root is not None else None
    if isinstance(context, int) and SEQUENCE != context and 0 < context <= _LONGEST_DECLARED:
        batch_dim = 1 if rnn is not None and not rnn.batch_first else 0
        shape = (context, BATCH) if batch_dim else (BATCH, context)
        found.append(Guess(shape, torch.long, {batch_dim: "B"}, "ids", high))
    return found


def _rnn_hidden(layer: nn.RNNBase, position: tuple[int, ...]) -> list[Input]:
    """The hidden state an RNN takes as its second argument: (num_layers * directions, B, hidden)."""
    stacked = layer.num_layers * (2 if layer.bidirectional else 1)
    proj = getattr(layer, "proj_size", 0) or layer.hidden_size
    h = Guess((stacked, BATCH, proj), dims={1: "B"})
    c = Guess((stacked, BATCH, layer.hidden_size), dims={1: "B"})
    if not isinstance(layer, nn.LSTM):
        return [h]
    if len(position) > 1:  # `self.lstm(x, (h, c))`: the parameter is one of the pair
        return [h if position[1] == 0 else c]
    return [(h, c)]


# attributes that say the image size a model was built for (timm, torchvision, CLIP)
_IMAGE_SIZE_NAMES = ("image_size", "img_size", "input_resolution", "image_resolution", "resolution")


def _spatial(root: nn.Module, conv: nn.modules.conv._ConvNd) -> list[int]:
    """The image size the model declares (`image_size`, `img_size`, or its config's), else SPATIAL rounded
    up to whole strides of the first convolution (a patch embedding takes whole patches)."""
    rank = len(conv.kernel_size)
    size = _declared(root, _IMAGE_SIZE_NAMES)
    if isinstance(size, int) and size > 0:
        return [size] * rank
    if isinstance(size, (tuple, list)) and len(size) == rank and all(isinstance(s, int) for s in size):
        return list(size)
    sizes = []
    for kernel, stride in zip(conv.kernel_size, conv.stride):
        step = max(stride, 1)
        sizes.append(max(-(-SPATIAL // step) * step, kernel))
    return sizes


# what an `nn.Lazy*` layer takes before its first input says: images of 3 channels, features of this width
LAZY_CHANNELS = 3
LAZY_WIDTH = 16


# the spatial sides a lazy norm's input has after its channels (none: a LazyBatchNorm1d's (B, C))
_LAZY_SIDES: dict[type, int] = {
    nn.LazyBatchNorm2d: 2,
    nn.LazyBatchNorm3d: 3,
    nn.LazyInstanceNorm1d: 1,
    nn.LazyInstanceNorm2d: 2,
    nn.LazyInstanceNorm3d: 3,
}


def _unsized(layer: nn.Module) -> bool:
    return isinstance(layer, LazyModuleMixin) and layer.has_uninitialized_params()


def _lazy(root: nn.Module, layer: nn.Module) -> list[Input]:
    """Inputs for a lazy layer, which takes any size on its sized dimension until its first forward."""
    if isinstance(layer, nn.modules.conv._ConvNd):
        return [Guess((BATCH, LAZY_CHANNELS, *_spatial(root, layer)), dims={0: "B"})]
    if isinstance(layer, (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)):
        rank = _LAZY_SIDES.get(type(layer), 0)
        return [Guess((BATCH, LAZY_WIDTH, *(SPATIAL,) * rank), dims={0: "B"})]
    return [
        Guess((BATCH, LAZY_WIDTH), dims={0: "B"}),
        Guess((BATCH, SEQUENCE, LAZY_WIDTH), dims={0: "B", 1: "T"}),
    ]


def by_layer(root: nn.Module, consumer: Consumer | None) -> list[Input]:
    """Input shapes this layer accepts, lowest rank first, with the free (batch/sequence) dims named."""
    if consumer is None:
        return []
    layer = consumer.layer
    float_ = torch.float32
    if _unsized(layer):
        return _lazy(root, layer)
    if isinstance(layer, (nn.Embedding, nn.EmbeddingBag)):
        return _ids(layer, consumer.rnn_after, root)
    if isinstance(layer, nn.Linear):
        n = layer.in_features
        return [
            Guess((BATCH, n), dims={0: "B"}),
            Guess((BATCH, SEQUENCE, n), dims={0: "B", 1: "T"}),
            Guess((BATCH, SEQUENCE, SEQUENCE, n), dims={0: "B", 1: "T"}),
        ]
    if isinstance(layer, nn.modules.conv._ConvNd):
        return [Guess((BATCH, layer.in_channels, *_spatial(root, layer)), float_, {0: "B"})]
    if isinstance(layer, nn.LayerNorm):
        ns = tuple(layer.normalized_shape)
        return [Guess((BATCH, *ns), dims={0: "B"}), Guess((BATCH, SEQUENCE, *ns), dims={0: "B", 1: "T"})]
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        c = layer.num_features
        sides: dict[type, list[tuple[int, ...]]] = {
            nn.BatchNorm1d: [(), (SPATIAL,)],
            nn.BatchNorm2d: [(SPATIAL, SPATIAL)],
            nn.BatchNorm3d: [(SPATIAL,) * 3],
        }
        extra = sides.get(type(layer), [()])
        return [Guess((BATCH, c, *rest), dims={0: "B"}) for rest in extra]
    if isinstance(layer, nn.GroupNorm):  # channels first, of any rank; mostly images (U-Nets, VAEs)
        c = layer.num_channels
        return [
            Guess((BATCH, c, SPATIAL, SPATIAL), dims={0: "B"}),
            Guess((BATCH, c, SEQUENCE), dims={0: "B"}),
            Guess((BATCH, c), dims={0: "B"}),
        ]
    if isinstance(layer, nn.RNNBase):
        if consumer.position[0] >= 1:
            return _rnn_hidden(layer, consumer.position)
        (first, second), names = _layout(layer)
        return [Guess((first, second, layer.input_size), dims=names)]
    if isinstance(layer, (nn.TransformerEncoder, nn.TransformerDecoder)) and len(layer.layers):
        layer = layer.layers[0]
    if isinstance(layer, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        layer = layer.self_attn
    if isinstance(layer, nn.MultiheadAttention):
        # the query is embed_dim wide; a key or value (`attn(q, context, context)`) kdim or vdim
        e = {1: layer.kdim, 2: layer.vdim}.get(consumer.position[0], layer.embed_dim)
        if layer.batch_first:
            return [Guess((BATCH, SEQUENCE, e), dims={0: "B", 1: "T"})]
        return [Guess((SEQUENCE, BATCH, e), dims={0: "T", 1: "B"})]
    return []


_IMAGE_NAMES = {"pixel_values", "img", "imgs", "image", "images"}
_TIMESTEP_NAMES = {"t", "timestep", "timesteps", "time", "sigma", "sigmas", "noise_level"}
# HuggingFace-style names: what the parameter is, whatever consumes it first
_TOKEN_FILLS = {"attention_mask": "ones", "token_type_ids": "zeros", "position_ids": "positions"}


def is_decoder_input(name: str) -> bool:
    """`decoder_input_ids`: the second sequence an encoder-decoder's forward takes."""
    return name.startswith("decoder_") and name.endswith("input_ids")


def by_name(name: str, root: nn.Module, consumer: Consumer | None) -> list[Input]:
    """Guesses that the parameter's name decides (`input_ids`, `attention_mask`, `pixel_values`), or []."""
    if name == "input_ids" or is_decoder_input(name):
        table = consumer.layer if consumer and isinstance(consumer.layer, nn.Embedding) else first(root, nn.Embedding)
        if table is not None:
            return _ids(table, consumer.rnn_after if consumer else None, root)
    if name in _TIMESTEP_NAMES:  # diffusion models (DiT, diffusers): one timestep per sample
        return [Guess((BATCH,), torch.float32, {0: "B"}, "positions")]
    if name in _TOKEN_FILLS:
        return [Guess((BATCH, SEQUENCE), torch.long, {0: "B", 1: "T"}, _TOKEN_FILLS[name])]
    if name in _IMAGE_NAMES:
        conv = consumer.layer if consumer and isinstance(consumer.layer, nn.Conv2d) else first(root, nn.Conv2d)
        if conv is not None:
            channels = LAZY_CHANNELS if _unsized(conv) else conv.in_channels
            return [Guess((BATCH, channels, *_spatial(root, conv)), dims={0: "B"})]
        if consumer is None or not by_layer(root, consumer):  # patches cut by einops, not a convolution
            size = _declared(root, _IMAGE_SIZE_NAMES)
            side = size if isinstance(size, int) and size > 0 else SPATIAL
            return [Guess((BATCH, 3, side, side), dims={0: "B"})]
    return []


ModuleT = TypeVar("ModuleT", bound=nn.Module)


def first(root: nn.Module, kind: type[ModuleT]) -> ModuleT | None:
    return next((m for m in root.modules() if isinstance(m, kind)), None)


def every_kind_of_leaf(root: nn.Module, kinds: int = 6) -> list[Input]:
    """When nothing says where the input flows (the trace failed before it was used): the guesses of the
    first leaf of each kind, in the order the model registers them, the first `kinds` kinds."""
    found: list[Input] = []
    seen: set[type] = set()
    rnn = first(root, nn.RNNBase)
    for module in root.modules():
        if type(module) in seen or len(seen) >= kinds:
            continue
        options = by_layer(root, Consumer(module, rnn_after=rnn))
        if options:
            seen.add(type(module))
            found += [o for o in options if o not in found]
    return found

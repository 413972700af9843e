"""What a constructor parameter's name says it is (its kind: a width, a count of heads, a rate, ...) and the small
values each kind is guessed at."""

from __future__ import annotations

import re

DIM, HEAD_DIM = 64, 16

# (kind, words of a name that say it): checked in order; the first kind any word matches wins
_KINDS = (
    ("rate", {"dropout", "drop", "rate", "prob", "p"}),
    ("eps", {"eps", "epsilon"}),
    ("length", {"seq", "len", "length", "context", "ctx", "positions", "position", "window"}),
    ("vocab", {"vocab", "ntoken", "ntokens", "tokens", "embeddings"}),
    ("classes", {"classes", "labels", "class", "categories"}),
    ("image", {"image", "img", "resolution", "res"}),
    ("patch", {"patch"}),
    ("channels", {"channels", "chans", "channel", "chan"}),
    ("activation", {"act", "activation", "nonlinearity"}),
    ("kernel", {"kernel"}),
    ("stride", {"stride", "strides"}),
    ("padding", {"padding", "pad"}),
    ("groups", {"groups", "group"}),
    ("ratio", {"ratio", "mult", "factor", "expansion", "multiplier"}),
    ("experts", {"experts", "expert"}),
    ("top", {"topk", "top"}),
    ("heads", {"heads", "head", "nhead", "nheads"}),
    ("depth", {"depth", "depths", "layers", "layer", "blocks", "stages", "nlayers"}),
    (
        "dim",
        {
            "dim",
            "dims",
            "hidden",
            "width",
            "widths",
            "embed",
            "embd",
            "emb",
            "model",
            "features",
            "size",
            "sizes",
            "planes",
            "inplanes",
            "units",
            "hid",
            "latent",
            "ff",
            "ffn",
            "mlp",
            "inner",
            "intermediate",
            "d",
            "filters",
            "embedding",
        },
    ),
    ("norm", {"norm", "normalization", "normalisation"}),
)
# how many spatial dimensions a layer works in (`spatial_dims` of medical-imaging code): a plane first
_SPATIAL_DIMS = {"spatial_dims", "spatial_dim", "num_spatial_dims", "n_dims", "ndim", "ndims", "dimensions"}
INT_VALUES = {
    "vocab": [100],
    "classes": [10],
    "image": [32, 64],
    "patch": [8, 4],
    "kernel": [3],
    "stride": [1, 2],
    "padding": [1, 0],
    "groups": [1],
    "ratio": [4],
    "length": [16],
    "experts": [4],
    "top": [2, 1],
    "heads": [4, 2],
    "depth": [2, 1],
    "dim": [DIM, 32],
    "spatial_dims": [2, 3],
}


# kinds that count modules (`num_experts`, `n_heads`, `depth`)
COUNTED = ("experts", "heads", "depth")


def words(name: str) -> list[str]:
    """`n_embd` -> [n, embd]; `numHeads` -> [num, heads]; `d_model` -> [d, model]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w.lower() for w in re.split(r"[_\W]+", spaced) if w]


def kind_of(name: str) -> str | None:
    parts = words(name)
    if name.lower() == "p":
        return "rate"
    if name.lower() in _SPATIAL_DIMS:
        return "spatial_dims"
    if any(w in ("dim", "size", "dims", "d") for w in parts) and any(w in ("head", "heads") for w in parts):
        return "head_dim"  # `dim_head`, `head_dim`: the size of one head
    if "block" in parts and "size" in parts:
        return "length"  # nanoGPT's `block_size` is the context length
    for kind, vocabulary in _KINDS:
        if any(w in vocabulary for w in parts):
            return kind
    return None


def ints(kind: str | None, name: str) -> list[int]:
    if kind == "channels":
        return [16, 3] if "out" in words(name) else [3, 1]
    if kind == "head_dim":
        return [HEAD_DIM]
    return list(INT_VALUES.get(kind or "", []))

"""Guessed inputs resized when forward rejects their size: images grown to the side a network's downsampling or
its positional table wants, a dim set to the size forward's own error names."""

from __future__ import annotations

import re
from dataclasses import replace

from fxlens.worker.construction.build import SPATIAL
from fxlens.worker.construction.guess_inputs import Guess, Input, each

# the most pixels or voxels a guessed image is grown to: a plane of 224×224, a volume of 64³ (a volume of
# 224³ is 5.7 GB for one 64-channel activation when the example runs on real CPU tensors)
_LARGEST_GROWN_IMAGE = 64**3


def with_side(value: Input, side: int, why: str) -> Input:
    """The guess with its image sides (the SPATIAL-sized dims after batch and channels) at `side`; as it
    was when that image would be over _LARGEST_GROWN_IMAGE."""
    return each(value, lambda guess: _with_side(guess, side, why))


def _with_side(value: Guess, side: int, why: str) -> Guess:
    if not isinstance(value, Guess) or value.fill == "ids":
        return value
    sides = [i for i, size in enumerate(value.shape) if i >= 2 and size == SPATIAL and i not in value.dims]
    if side ** len(sides) > _LARGEST_GROWN_IMAGE:
        return value
    shape = tuple(side if i in sides else size for i, size in enumerate(value.shape))
    why = f"{value.why}, {side}×{side}: {why}" if value.why else value.why
    return value if shape == value.shape else replace(value, shape=shape, why=why)


# "expects the mel input features to be of length 3000, but found 16": the size forward wants, and the
# guessed size it rejected
# (not a rank: "Expected 4D input (got 3D input)")
_NAMED_SIZE = re.compile(
    r"expect\w*\b[^.\d]{0,80}?(\d+)(?![\dD]|-?dim)\D{0,40}?\b(?:found|got|received)\b"
    r"\D{0,20}?(\d+)(?![\dD]|-?dim)",
    re.IGNORECASE,
)
_LARGEST_NAMED_SIZE = 1 << 16


def named_size(error: BaseException | None) -> tuple[int, int] | None:
    """(size forward rejected, size it says it expects), when its error names both."""
    found = _NAMED_SIZE.search(str(error)) if isinstance(error, (ValueError, AssertionError, RuntimeError)) else None
    if found is None:
        return None
    wanted, rejected = int(found.group(1)), int(found.group(2))
    return (rejected, wanted) if 0 < wanted <= _LARGEST_NAMED_SIZE and wanted != rejected else None


def with_size(value: Input, rejected: int, wanted: int) -> Input:
    """The guess with its last dim of size `rejected` at `wanted` (no longer a free dim)."""
    return each(value, lambda guess: _with_size(guess, rejected, wanted))


def _with_size(value: Guess, rejected: int, wanted: int) -> Guess:
    if not isinstance(value, Guess) or rejected not in value.shape:
        return value
    dim = len(value.shape) - 1 - value.shape[::-1].index(rejected)
    shape = (*value.shape[:dim], wanted, *value.shape[dim + 1 :])
    why = f"{value.why}; dim {dim} at {wanted}, the size forward's error asks for"
    return replace(value, shape=shape, dims={d: n for d, n in value.dims.items() if d != dim}, why=why)

"""The `# fxlens:` expression that reproduces a build: constructor and inputs, as Python source that
evaluates, in the file's namespace plus `torch`, to the same construction and inputs (shapes and
dtypes and memory layout; a meta tensor has no values to repeat)."""

from __future__ import annotations

from typing import Any

import torch

_SMALL = 64  # a real CPU tensor up to this many elements is written out value for value
_FACTORY = {
    torch.bool: "torch.ones",
    **{d: "torch.zeros" for d in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)},
}


class Inexpressible(Exception):
    """A value no short expression rebuilds (an object, a closure)."""


def _layout(value: torch.Tensor) -> list[int] | None:
    """The dims in memory order (outermost first) of a dense tensor laid out as a permutation of its
    sizes (channels_last, a transpose), or None when it is contiguous or not such a permutation.
    The layout matters: a forward may call `.contiguous()`, which torch records only when it copies."""
    if value.is_contiguous() or value.dim() < 2:
        return None
    strides = value.stride()
    order = sorted(range(value.dim()), key=lambda d: -strides[d])
    expected = 1
    for dim in reversed(order):
        if value.size(dim) != 1 and value.stride(dim) != expected:
            return None  # overlapping, strided or a view into a bigger tensor: not a plain permutation
        expected *= value.size(dim)
    return order


def _tensor(value: torch.Tensor) -> str:
    order = _layout(value)
    if order is not None:
        inverse = [order.index(d) for d in range(value.dim())]
        # permuted into memory order the tensor is contiguous: written as any contiguous one, then permuted back
        return f"{_tensor(value.permute(order))}.permute({', '.join(map(str, inverse))})"
    sizes = ", ".join(str(int(s)) for s in value.shape)
    dtype = str(value.dtype)
    if (
        value.device.type == "cpu"
        and value.numel() <= _SMALL
        and not value.is_floating_point()
        and value.dtype != torch.bool
        and bool(value.any())
    ):
        return f"torch.tensor({value.tolist()!r}, dtype={dtype})"  # ids: their values may matter
    factory = _FACTORY.get(value.dtype, "torch.randn")
    default = torch.get_default_dtype() if factory == "torch.randn" else None
    typed = "" if value.dtype == default else f", dtype={dtype}"
    return f"{factory}({sizes}{typed})" if sizes or typed else f"{factory}(()){typed}"


def expression(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, tuple):
        items = [expression(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(expression(v) for v in value)}]"
    if isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
        return "{" + ", ".join(f"{k!r}: {expression(v)}" for k, v in value.items()) + "}"
    raise Inexpressible(type(value).__name__)


def call_text(args: tuple, kwargs: dict) -> str | None:
    """`torch.randn(2, 8), mask=torch.ones(2, 8, dtype=torch.bool)`, or None when a value cannot be written."""
    try:
        return ", ".join([*(expression(a) for a in args), *(f"{k}={expression(v)}" for k, v in kwargs.items())])
    except Inexpressible:
        return None


def directive(constructor: str, args: tuple | None, kwargs: dict) -> str:
    """`Ctor(...)(inputs)`; the constructor alone when there are no inputs (fxlens then finds them)."""
    if not constructor or args is None:
        return constructor
    inputs = call_text(args, kwargs)
    return f"{constructor}({inputs})" if inputs is not None else constructor

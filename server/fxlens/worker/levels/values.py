"""Describe traced values (tensors, fake tensors, SymInts, tuples) as report data."""

from __future__ import annotations

from typing import Any

import torch


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _concrete(size: Any) -> Any:
    """An int, or the text of a size only known at run time (`u0` from `.item()`, `.nonzero()`)."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        return int(expr) if getattr(expr, "is_number", False) else str(expr)
    return int(size)


# Free sizes are read off two runs: the example, and one with B doubled and T tripled. Distinct growth
# factors make every size's ratio tell which of B, T or B*T it follows (4 -> 8 is 2*B, 4 -> 12 is T//2),
# at the cost of two meta runs instead of one symbolic run that is 10x slower.
GROWTH = {"B": 2, "T": 3}


def scale_up(inputs: tuple, dims: list) -> tuple:
    """The inputs with every named free dim multiplied by its growth factor (values do not matter).

    An input that is a tuple of tensors (an LSTM's `(h, c)`) has a list of dims, one per tensor."""
    return tuple(_scaled_up(value, free) for value, free in zip(inputs, dims))


def _scaled_up(value: Any, free: Any) -> Any:
    if isinstance(value, tuple) and isinstance(free, list):
        return tuple(_scaled_up(item, dims) for item, dims in zip(value, free))
    if isinstance(value, torch.Tensor) and free:
        shape = [size * GROWTH[free[d]] if d in free else size for d, size in enumerate(value.shape)]
        return torch.zeros(shape, dtype=value.dtype, device=value.device)
    return value


def free_sizes(inputs: tuple, dims: list) -> dict[str, int]:
    """Each free name's size in the example inputs ({"B": 2, "T": 8}), tuples of tensors included."""
    sizes: dict[str, int] = {}
    for value, free in zip(inputs, dims):
        pairs = zip(value, free) if isinstance(value, tuple) and isinstance(free, list) else [(value, free)]
        for tensor, named in pairs:
            if isinstance(tensor, torch.Tensor) and named:
                sizes.update({name: int(tensor.shape[d]) for d, name in named.items()})
    return sizes


class SampledSizes:
    """Names a size from its values in the two runs, given each free name's size in the first run."""

    def __init__(self, bases: dict[str, int]) -> None:
        self.monomials = [(name, base, GROWTH[name]) for name, base in bases.items()]
        if len(bases) == 2:
            (n1, b1, g1), (n2, b2, g2) = self.monomials
            self.monomials.append((f"{n1}*{n2}", b1 * b2, g1 * g2))

    def dim(self, size: Any, other: Any = None) -> Any:
        a = _concrete(size)
        b = _concrete(other) if other is not None else a
        if not isinstance(a, int) or not isinstance(b, int) or a == b:
            return a
        for label, base, factor in self.monomials:
            if b == a * factor:  # a = k * base
                if a % base == 0:
                    k = a // base
                    return label if k == 1 else f"{k}*{label}"
                if base % a == 0:
                    return f"{label}//{base // a}"
        for label, base, factor in self.monomials:
            c = a - base
            if b - base * factor == c and 0 < abs(c) <= 8:  # label + c
                return f"{label} + {c}" if c > 0 else f"{label} - {-c}"
        return a  # right for the example; no simple expression of B and T explains it


def describe(value: Any, names: Any, other: Any = None) -> tuple[list | None, str | None, str | None]:
    """(shape, dtype, value-text) of one traced value; `other` is its twin from the scaled run, if any."""
    if isinstance(value, torch.Tensor):
        twin = list(other.shape) if isinstance(other, torch.Tensor) and other.dim() == value.dim() else None
        return (
            [names.dim(s, twin[i] if twin else None) for i, s in enumerate(value.shape)],
            dtype_name(value.dtype),
            None,
        )
    if isinstance(value, torch.SymInt):
        return None, None, f"SymInt {_concrete(value)}"
    if isinstance(value, (torch.SymFloat, torch.SymBool)):
        return None, None, f"{type(value).__name__} {value}"
    if isinstance(value, (tuple, list)):
        twins = other if isinstance(other, (tuple, list)) and len(other) == len(value) else [None] * len(value)
        parts = []
        for item, twin in zip(value, twins):
            shape, dtype, text = describe(item, names, twin)
            if shape is not None:
                parts.append(f"Tensor({', '.join(map(str, shape))}) {dtype}")
            else:
                parts.append(text or type(item).__name__)
        return None, None, f"{type(value).__name__}[{', '.join(parts)}]"
    if value is None:
        return None, None, None
    if isinstance(value, int) and not isinstance(value, bool) and isinstance(other, int) and other != value:
        return None, None, f"int {names.dim(value, other)}"
    if isinstance(value, (int, float, bool)):
        return None, None, f"{type(value).__name__} {value}"
    return None, None, type(value).__name__


def plain_sizes(value: Any) -> Any:
    """Plain data for a traced value of a run with scaled inputs, only its sizes (tensors, ints, tuples): what
    a forked process sends back for `twin_of` to compare with."""
    if isinstance(value, torch.Tensor):
        # a size known only at run time (`u0` from `.item()`) has no scaled twin to compare with
        sizes = [s.node.expr if isinstance(s, torch.SymInt) else s for s in value.shape]
        return {"shape": [int(s) for s in sizes]} if all(getattr(s, "is_number", True) for s in sizes) else None
    if isinstance(value, (tuple, list)):
        return [plain_sizes(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def twin_of(sizes: Any) -> Any:
    """Back from plain_sizes's data to something `describe` compares with (a meta tensor allocates nothing)."""
    if isinstance(sizes, dict):
        return torch.empty(sizes["shape"], device="meta")
    if isinstance(sizes, list):
        return tuple(twin_of(item) for item in sizes)
    return sizes

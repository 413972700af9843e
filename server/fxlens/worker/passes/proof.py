"""The proof: the original and the transformed module on the same seeded random inputs, compared.

Real CPU tensors at the example's sizes (floats drawn with torch.randn, a fresh seed per draw; integer
and boolean inputs keep the example's values, or zeros / True where the example had only meta tensors:
an index of 0 is in range of any table), modules in eval mode (dropout off, batch norm on its running
statistics), under torch.no_grad().
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._pytree import keystr, tree_flatten_with_path

from fxlens.pass_report import OutputCheck, Proof
from fxlens.worker.levels.values import dtype_name

DRAWS = 3
SEED = 0
RTOL, ATOL = 1e-5, 1e-6  # torch.allclose's float32-sized tolerance: a reordered sum stays "close"


def draw(value: Any, generator: torch.Generator) -> Any:
    """`value` with every floating tensor replaced by fresh normal values of its size."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point or value.dtype.is_complex:
            return torch.randn(tuple(value.shape), generator=generator).to(value.dtype)
        if value.device.type != "meta":
            return value.clone()
        return (
            torch.ones(tuple(value.shape), dtype=torch.bool)
            if value.dtype == torch.bool
            else torch.zeros(tuple(value.shape), dtype=value.dtype)
        )
    if isinstance(value, tuple):
        return tuple(draw(item, generator) for item in value)
    if isinstance(value, list):
        return [draw(item, generator) for item in value]
    if isinstance(value, dict):
        return {key: draw(item, generator) for key, item in value.items()}
    return value


def _where(index: int, flat_position: int, shape: tuple) -> str:
    position = []
    for size in reversed(shape):
        position.append(flat_position % size if size else 0)
        flat_position //= size if size else 1
    return f"draw {index}, index ({', '.join(map(str, reversed(position)))}{',' if len(shape) == 1 else ''})"


class _Leaf:
    """One output leaf's comparison, accumulated over the draws."""

    def __init__(self, index: int, path: str) -> None:
        self.check = OutputCheck(index, path, True)
        self.close = True
        self.signal = 0.0
        self.noise = 0.0

    def add(self, draw_index: int, a: Any, b: Any) -> None:
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            same = a == b if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor) else False
            self.check.equal &= bool(same)
            self.close &= bool(same)
            if not same and not self.check.where:
                self.check.where = f"draw {draw_index}: {a!r:.40} vs {b!r:.40}"
            return
        self.check.shape, self.check.dtype = [int(s) for s in a.shape], dtype_name(a.dtype)
        if a.shape != b.shape:
            self.check.equal = self.close = False
            self.check.where = self.check.where or f"draw {draw_index}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
            return
        self.check.equal &= torch.equal(a, b) and a.dtype == b.dtype
        x, y = a.detach().double(), b.detach().double()
        if x.numel() == 0:
            return
        error = (x - y).abs()
        error = torch.where(torch.isnan(x) & torch.isnan(y), torch.zeros_like(error), error)
        largest = float(error.max())
        if self.check.max_abs_diff is None or largest > self.check.max_abs_diff or math.isnan(largest):
            self.check.max_abs_diff = largest
            if largest > 0 or math.isnan(largest):
                self.check.where = _where(draw_index, int(error.argmax()), tuple(a.shape))
        self.close &= bool(torch.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True))
        self.signal += float((x * x).sum())
        self.noise += float(((x - y) ** 2).sum())

    def done(self) -> OutputCheck:
        if self.noise > 0:
            self.check.sqnr_db = 10 * math.log10(self.signal / self.noise) if self.signal > 0 else -math.inf
        return self.check


def prove(
    original: torch.nn.Module,
    transformed: torch.nn.Module,
    inputs: tuple,
    quantization: bool,
    draws: int = DRAWS,
    seed: int = SEED,
) -> Proof:
    proof = Proof(
        draws=draws,
        seed=seed,
        rtol=RTOL,
        atol=ATOL,
        tensors=f"CPU: torch.randn at the example's sizes, seeds {seed}..{seed + draws - 1}; eval mode; "
        "torch.no_grad()",
    )
    leaves: list[_Leaf] = []
    original.eval()
    transformed.eval()
    with torch.no_grad():
        for index in range(draws):
            generator = torch.Generator().manual_seed(seed + index)
            values = draw(inputs, generator)
            before, _ = tree_flatten_with_path(original(*values))
            after, _ = tree_flatten_with_path(transformed(*draw(inputs, torch.Generator().manual_seed(seed + index))))
            if len(before) != len(after):
                proof.verdict = "changes results"
                proof.first_difference = (
                    f"draw {index}: the module returns {len(after)} values instead of {len(before)}"
                )
                return proof
            if not leaves:
                leaves = [_Leaf(i, keystr(path)) for i, (path, _) in enumerate(before)]
            for leaf, (_, a), (_, b) in zip(leaves, before, after):
                leaf.add(index, a, b)
    proof.outputs = [leaf.done() for leaf in leaves]
    proof.verdict = _verdict(leaves, quantization)
    first = next((leaf.check for leaf in leaves if not leaf.check.equal), None)
    if first is not None and proof.verdict != "equal":
        size = f"max |diff| {first.max_abs_diff:.3g}" if first.max_abs_diff is not None else "differs"
        where = f" at {first.where}" if first.where else ""
        proof.first_difference = f"output {first.path or first.index}: {size}{where}"
    return proof


def _verdict(leaves: list[_Leaf], quantization: bool) -> str:
    if all(leaf.check.equal for leaf in leaves):
        return "equal"
    if all(leaf.close for leaf in leaves):
        return "close"
    return "quantized" if quantization else "changes results"


def not_run(why: str) -> Proof:
    return Proof(verdict="not run", why_not=why)


def first_line(error: BaseException) -> str:
    text = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {text}"[:300]

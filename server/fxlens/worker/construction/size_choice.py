"""Sizes chosen for recorded checks (solve_shapes.py): small values that satisfy every check, powers of two and
the divisors of the numbers the checks name first, one group of sizes changed at a time."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy  # type: ignore[import-untyped]  # torch's own dependency: its symbolic sizes are sympy

# a size is (input index, index inside a tuple input, dim)
Key = tuple[int, int, int]

SMALLEST_SIZE, LARGEST_SIZE = 2, 4096
# the most elements one solved input may have (a 3×224×224 image is 150 k; a real CPU run of it stays small)
_LARGEST_INPUT = 1 << 22


def symbol(key: Key) -> sympy.Symbol:
    return sympy.Symbol("v{}_{}_{}".format(*key), integer=True, positive=True)


def key_of(symbol: sympy.Symbol) -> Key:
    i, j, d = symbol.name[1:].split("_")
    return int(i), int(j), int(d)


_FUNCTIONS = {
    "FloorDiv": operator.floordiv,
    "CleanDiv": operator.floordiv,
    "PythonMod": operator.mod,
    "Mod": operator.mod,
    "Max": max,
    "Min": min,
    "CeilToInt": math.ceil,
    "FloorToInt": math.floor,
    "TruncToInt": math.trunc,
    "IntTrueDiv": operator.truediv,
    "ToFloat": float,
}


@dataclass
class Check:
    """A guard as a fast Python function of its sizes (sympy's substitution when it cannot be one)."""

    expr: sympy.Basic
    keys: list[Key]
    function: Callable[..., Any] | None

    @staticmethod
    def of(expr: sympy.Basic) -> Check:
        symbols = sorted(expr.free_symbols, key=lambda s: s.name)
        try:
            function = sympy.lambdify(symbols, expr, modules=[_FUNCTIONS, "math"])
        except Exception:  # noqa: BLE001  a function sympy cannot print: substitution does it, slower
            function = None
        return Check(expr, [key_of(s) for s in symbols], function)

    def holds(self, sizes: dict[Key, int]) -> bool:
        values = [sizes[key] for key in self.keys]
        if self.function is not None:
            try:
                return bool(self.function(*values))
            except Exception:  # noqa: BLE001  a function lambdify spelled wrongly: substitution is exact
                self.function = None
        result = self.expr.xreplace({symbol(k): sympy.Integer(v) for k, v in zip(self.keys, values)})
        return result is sympy.true


def _candidates(condition: sympy.Basic) -> list[int]:
    """Sizes to try, smallest first: powers of two and the divisors of the numbers the check names (a
    Linear's 512, a table's 197), then every size up to the largest."""
    numbers = {abs(int(n)) for n in condition.atoms(sympy.Integer) if 1 < abs(int(n)) <= LARGEST_SIZE * 4}
    preferred = {2**k for k in range(1, 13)} | {d for n in numbers for d in _divisors(n)} | numbers
    preferred = {v for v in preferred if SMALLEST_SIZE <= v <= LARGEST_SIZE}
    return sorted(preferred) + [v for v in range(SMALLEST_SIZE, LARGEST_SIZE + 1) if v not in preferred]


def _divisors(n: int) -> set[int]:
    return {d for k in range(1, math.isqrt(n) + 1) if n % k == 0 for d in (k, n // k)}


def _groups(keys: set[Key], sizes: dict[Key, int], batch: set[Key]) -> list[list[Key]]:
    """The sizes to change together: an input's dims of equal size (an image's height and width) first, then
    each alone; named sizes (the batch) last."""
    tied: dict[tuple[int, int, int], list[Key]] = {}
    for key in sorted(keys):
        tied.setdefault((key[0], key[1], sizes[key]), []).append(key)
    groups = [g for g in tied.values() if len(g) > 1] + [[k] for k in sorted(keys)]
    return sorted(groups, key=lambda g: any(k in batch for k in g))


def _fits(sizes: dict[Key, int]) -> bool:
    per_input: dict[tuple[int, int], int] = {}
    for (i, j, _), size in sizes.items():
        per_input[(i, j)] = per_input.get((i, j), 1) * size
    return all(count <= _LARGEST_INPUT for count in per_input.values())


def satisfy(sizes: dict[Key, int], checks: list[Check], named: set[Key]) -> dict[Key, int] | None:
    """Sizes where every check holds, from the guessed ones: check by check, one group of sizes changed to the
    smallest value that satisfies it while every check that held still does."""
    for _ in range(len(checks) + 1):
        failing = next((check for check in checks if not check.holds(sizes)), None)
        if failing is None:
            return sizes
        held = [check for check in checks if check is not failing and check.holds(sizes)]
        sizes_now = sizes
        for group in _groups(set(failing.keys), sizes, named):
            found = next(
                (
                    trial
                    for value in _candidates(failing.expr)
                    if failing.holds(trial := {**sizes, **dict.fromkeys(group, value)})
                    and all(check.holds(trial) for check in held)
                    and _fits(trial)
                ),
                None,
            )
            if found is not None:
                sizes = found
                break
        if sizes is sizes_now:
            return None
    return None


def pinned_sizes(named: dict[Key, str], sizes: dict[Key, int], checks: list[Check]) -> set[Key]:
    """The named sizes a check pins: those that cannot grow (all of a name's sizes together, as the scaled
    export grows them, else each alone) without breaking a check."""

    def grows(keys: list[Key]) -> bool:
        trials = ({**sizes, **{k: grow(sizes[k]) for k in keys}} for grow in (lambda v: v + 1, lambda v: 2 * v))
        return all(all(check.holds(trial) for check in checks) for trial in trials)

    pinned: set[Key] = set()
    for name in set(named.values()):
        keys = [key for key, n in named.items() if n == name]
        if not grows(keys):
            pinned |= {key for key in keys if not grows([key])}
    return pinned


def is_bound(condition: sympy.Basic) -> bool:
    """Whether the condition is one of the bounds every size is made with (_symbolic_inputs)."""
    low, high = sympy.Integer(SMALLEST_SIZE), sympy.Integer(LARGEST_SIZE)
    return isinstance(condition, sympy.Le) and (condition.lhs == low or condition.rhs == high)

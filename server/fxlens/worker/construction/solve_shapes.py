"""Input sizes solved from the model's own checks instead of searched.

Every size of every tensor input becomes an unbacked symbol of torch's ShapeEnv (the machinery behind
export's dynamic shapes): a size with no example value. Forward runs once on fake tensors and each check the
model makes on a size (a Linear's `in_features`, a `view`, a positional table's length, a `cat`) is recorded,
not decided: torch keeps it as a runtime assertion, or pins the size outright (`Eq(u1, 3)` for a
convolution's channels). A check Python itself must decide (an `assert`, an `if` on a size) stops the run
with the condition: it is assumed and the run starts again. An operator that needs numbers for its sizes (a meta
kernel that expands to them: MultiheadAttention's baddbmm) gets the values the checks so far allow, and the
run goes on. Small sizes that satisfy every recorded check are then chosen (size_choice.py). Only fake
tensors: no memory is spent on a guess.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import sympy  # type: ignore[import-untyped]  # torch's own dependency: its symbolic sizes are sympy
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, ShapeEnv
from torch.nn.utils.stateless import _reparametrize_module

from fxlens.worker.construction.guess_inputs import Guess, Input, Plain
from fxlens.worker.construction.size_choice import (
    LARGEST_SIZE,
    SMALLEST_SIZE,
    Check,
    Key,
    is_bound,
    key_of,
    pinned_sizes,
    satisfy,
    symbol,
)
from fxlens.worker.levels import devices

# runs with one more assumed condition each (an `assert`, an `if` on a size)
_ROUNDS = 8


@dataclass
class Run:
    """One fake run: its error (None: forward ran), the checks it recorded on the sizes (as conditions on our
    symbols), and the condition Python had to decide, when that stopped it."""

    error: BaseException | None
    checks: list[sympy.Basic]
    undecided: sympy.Basic | None = None


def _leaves(value: Input) -> list[Guess]:
    """The tensors' guesses of an input: a tuple's or a dict's in order, none of a None or a plain value."""
    if value is None or isinstance(value, Plain):
        return []
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, tuple) else [value]


def _rebuilt(value: Input, leaves: list[Any]) -> Any:
    """`leaves` (one per guess of `_leaves(value)`) in the input's structure."""
    if value is None:
        return None
    if isinstance(value, Plain):
        return value.value
    if isinstance(value, dict):
        return dict(zip(value, leaves))
    return tuple(leaves) if isinstance(value, tuple) else leaves[0]


def _sizes(chosen: list[Input]) -> dict[Key, int]:
    return {
        (i, j, d): size
        for i, value in enumerate(chosen)
        for j, guess in enumerate(_leaves(value))
        for d, size in enumerate(guess.shape)
    }


def _symbolic_inputs(
    env: ShapeEnv, mode: FakeTensorMode, chosen: list[Input], assumed: list[sympy.Basic], static: dict[Key, int]
) -> tuple:
    """Fake CPU tensors whose sizes are unbacked symbols (each at least 2: a size of 1 broadcasts) but for the
    `static` ones, the assumed conditions checked on them, and {torch's symbol: ours}."""
    names: dict[sympy.Symbol, sympy.Symbol] = {}
    ours: dict[Key, Any] = dict(static)

    def size(key: Key) -> Any:
        if key in static:
            return static[key]
        value = env.create_unbacked_symint()
        torch._check(value >= SMALLEST_SIZE)
        torch._check(value <= LARGEST_SIZE)
        names[value.node.expr] = symbol(key)
        ours[key] = value
        return value

    made = []
    with mode:
        for i, value in enumerate(chosen):
            tensors = [
                torch.empty([size((i, j, d)) for d in range(len(g.shape))], dtype=g.dtype)
                for j, g in enumerate(_leaves(value))
            ]
            made.append(_rebuilt(value, tensors))
        for condition in assumed:
            _check_on(condition, ours)
    return tuple(made), names


_RELATIONS: dict[type, Callable[[Any, Any], Any]] = {
    sympy.Eq: operator.eq,
    sympy.Ne: operator.ne,
    sympy.Lt: operator.lt,
    sympy.Le: operator.le,
    sympy.Gt: operator.gt,
    sympy.Ge: operator.ge,
}


def _check_on(condition: sympy.Basic, ours: dict[Key, Any]) -> None:
    """`torch._check` of a condition on our symbols, on this run's sizes (each side of a relation computed
    with the SymInts, a conjunction as its parts)."""
    if isinstance(condition, sympy.And):
        for part in condition.args:
            _check_on(part, ours)
        return
    relation = _RELATIONS.get(type(condition))
    if relation is None:
        return  # no relation torch can take: the solved sizes are checked by the confirming run all the same
    left, right = (_value_on(side, ours) for side in condition.args)
    torch._check(relation(left, right))


# sympy's functions on SymInts, for an assumed condition handed to torch._check
_SYM_FUNCTIONS = {
    "FloorDiv": operator.floordiv,
    "CleanDiv": operator.floordiv,
    "PythonMod": operator.mod,
    "Mod": operator.mod,
    "Max": torch.sym_max,
    "Min": torch.sym_min,
}


def _value_on(expr: sympy.Basic, ours: dict[Key, Any]) -> Any:
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    function = sympy.lambdify(symbols, expr, modules=[_SYM_FUNCTIONS, "math"])
    return function(*(ours[key_of(s)] for s in symbols))


@contextmanager
def _quiet() -> Iterator[None]:
    """Fake tensors log every failed meta kernel as an error: a rejected guess is expected here."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


Call = Callable[[nn.Module, tuple], Any]


def _fake_run(
    instance: nn.Module, chosen: list[Input], assumed: list[sympy.Basic], call: Call, static: dict[Key, int]
) -> Run:
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    names: dict[sympy.Symbol, sympy.Symbol] = {}
    error: BaseException | None = None
    try:
        fakes = devices.fake_state(mode, instance)
        # an assumption the other sizes already contradict raises here: no sizes satisfy this run's checks
        made, names = _symbolic_inputs(env, mode, chosen, assumed, static)
        with _quiet(), _reparametrize_module(instance, fakes), mode, torch.no_grad():
            call(instance, made)
    except Exception as raised:  # noqa: BLE001  the user's forward rejecting these sizes is what is read
        error = raised
    ours = set(names.values())
    recorded = [
        *(sympy.Eq(names[s], v.xreplace(names)) for s, v in env.replacements.items() if s in names),
        *(a.expr.xreplace(names) for asserts in env.deferred_runtime_asserts.values() for a in asserts),
    ]
    undecided = None
    if isinstance(error, GuardOnDataDependentSymNode):
        cond = error.cond.xreplace(names)
        undecided = cond if cond.free_symbols and cond.free_symbols <= ours else None
    return Run(error, [c for c in recorded if c.free_symbols and c.free_symbols <= ours], undecided)


def _assumed(condition: sympy.Basic) -> sympy.Basic:
    """What to assume of a condition Python decides: that it holds (an `assert`, an `if` written for the
    sizes the model takes), except a size of exactly 0 or 1, which only an edge case asks about."""
    if isinstance(condition, sympy.Eq) and any(side in (sympy.Integer(0), sympy.Integer(1)) for side in condition.args):
        return sympy.Not(condition)
    return condition


@dataclass
class Solved:
    """The guesses resized, and the sizes a check pinned (no longer free)."""

    values: list[Input]
    pinned: set[Key]


def solve(instance: nn.Module, chosen: list[Input], call: Call) -> Solved | None:
    """Sizes for `chosen` (one guess per input: ranks, dtypes and first sizes) that forward's checks accept,
    on fake tensors; None when the guessed sizes already satisfy them, or nothing does."""
    guessed = _sizes(chosen)
    # an operator with no symbolic sizes (a pad, a transposed convolution) stops the first run: the images'
    # sides then stay as guessed, and the channels and widths are still solved
    for first in ({}, _image_sides(guessed, chosen)):
        run, assumed, static = _recorded(instance, chosen, call, first)
        if run.error is None:
            break
    else:
        return None
    checks = [Check.of(condition) for condition in (*run.checks, *assumed)]
    named = {(i, j, d): n for i, v in enumerate(chosen) for j, g in enumerate(_leaves(v)) for d, n in g.dims.items()}
    sizes = satisfy({**guessed, **static}, checks, set(named))
    if sizes is None or sizes == guessed:
        return None
    pinned = pinned_sizes(named, sizes, checks) | (set(named) & set(static))  # a number torch needed is no free size
    return Solved(_resized(chosen, sizes, pinned), pinned)


def _recorded(
    instance: nn.Module, chosen: list[Input], call: Call, static: dict[Key, int]
) -> tuple[Run, list[sympy.Basic], dict[Key, int]]:
    """The last run, the conditions assumed on the way (one more each time Python decided on a size) and the
    sizes kept as guessed (those given, and each size torch needed as a plain number)."""
    assumed: list[sympy.Basic] = []
    static = dict(static)
    run = _fake_run(instance, chosen, assumed, call, static)
    for _ in range(_ROUNDS):
        if isinstance(run.undecided, sympy.Symbol):
            static[key_of(run.undecided)] = _sizes(chosen)[key_of(run.undecided)]
            run = _fake_run(instance, chosen, assumed, call, static)
        elif (
            run.undecided is None
            and _refuses_symbols(run.error)
            and (fixed := _numbers_for(run, assumed, chosen, static))
        ):
            static.update(fixed)
            run = _fake_run(instance, chosen, assumed, call, static)
        elif run.undecided is None or run.undecided in assumed:
            break
        else:
            run, assumed = _assume(instance, chosen, call, static, assumed, run.undecided)
    return run, assumed, static


# torch itself refusing a size with no value (a meta kernel that expands to sizes it needs as numbers:
# MultiheadAttention's baddbmm), not the model's own check
_NO_SYMBOLS = ("expected to contain only concrete integers", "data-dependent", "unbacked")


def _refuses_symbols(error: BaseException | None) -> bool:
    return isinstance(error, GuardOnDataDependentSymNode) or any(text in str(error) for text in _NO_SYMBOLS)


def _numbers_for(run: Run, assumed: list[sympy.Basic], chosen: list[Input], static: dict[Key, int]) -> dict[Key, int]:
    """Numbers for the sizes the checks so far constrain, satisfying them: the run goes on past the operator
    that needs numbers with those sizes given (and later checks on them are then decided, no longer recorded)."""
    checks = [Check.of(condition) for condition in (*run.checks, *assumed)]
    # a size only bounded (each is at least 2 and at most the largest) is not constrained yet: it stays a symbol,
    # unless no constrained one is left to give a number (then every size has its guessed one)
    keys = {key for check in checks if not is_bound(check.expr) for key in check.keys} - set(static)
    keys = keys or set(_sizes(chosen)) - set(static)
    named = {(i, j, d) for i, v in enumerate(chosen) for j, g in enumerate(_leaves(v)) for d in g.dims}
    sizes = satisfy({**_sizes(chosen), **static}, checks, named)
    return {key: sizes[key] for key in keys} if sizes is not None else {}


def _assume(
    instance: nn.Module, chosen: list[Input], call: Call, static: dict[Key, int], assumed: list, condition: sympy.Basic
) -> tuple[Run, list[sympy.Basic]]:
    """The run with `condition` assumed (see _assumed), or its negation when that branch raised at once: the
    condition of an `if embed_dim != 32: raise ...` is the one the model does not take."""
    taken = [*assumed, _assumed(condition)]
    run = _fake_run(instance, chosen, taken, call, static)
    if _went_on(run):
        return run, taken
    other = [*assumed, sympy.Not(taken[-1])]
    flipped = _fake_run(instance, chosen, other, call, static)
    return (flipped, other) if _went_on(flipped) else (run, taken)


def _went_on(run: Run) -> bool:
    """Whether the run passed the model's checks: it ended, or stopped on a condition to decide or on an
    operator that needs numbers for its sizes."""
    return run.error is None or run.undecided is not None or _refuses_symbols(run.error)


def _image_sides(sizes: dict[Key, int], chosen: list[Input]) -> dict[Key, int]:
    ranks = {(i, j): len(g.shape) for i, v in enumerate(chosen) for j, g in enumerate(_leaves(v))}
    return {key: size for key, size in sizes.items() if ranks[key[:2]] >= 4 and key[2] >= 2}


def _resized(chosen: list[Input], sizes: dict[Key, int], pinned: set[Key]) -> list[Input]:
    def one(i: int, j: int, guess: Guess) -> Guess:
        shape = tuple(sizes[(i, j, d)] for d in range(len(guess.shape)))
        changed = {d for d, (a, b) in enumerate(zip(shape, guess.shape)) if a != b}
        dims = {d: name for d, name in guess.dims.items() if d not in changed and (i, j, d) not in pinned}
        if shape == guess.shape:
            return replace(guess, dims=dims)
        why = f"{guess.why}; sizes {shape} solved from forward's own checks"
        return replace(guess, shape=shape, dims=dims, why=why.lstrip("; "))

    resized: list[Input] = []
    for i, value in enumerate(chosen):
        leaves = [one(i, j, guess) for j, guess in enumerate(_leaves(value))]
        resized.append(value if isinstance(value, Plain) else _rebuilt(value, leaves))
    return resized

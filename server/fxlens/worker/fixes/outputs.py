"""The second half of a fix's proof: the original and the fixed module run on the same inputs, compared.

Inputs: the traced example's own values where they are real CPU tensors (else a draw at its sizes, seed 0),
then two seeded draws (passes/proof.py's `draw`: torch.randn at the example's sizes), then the variants of them
that run a line the fix replaces which those do not (coverage.py): a fix is compared on every way it rewrites.
Modes: eval, and train too where the original's outputs differ between them (dropout, batch norm); the global RNG
is seeded alike before each call, so dropout draws the same mask for both. After every call the two modules' state
(parameters, buffers, plain attributes of every submodule) must be equal, and so must what the call printed and
warned. Each module gets its own copy of the inputs, and the caller's tensors after the call are compared too: code
that updates its input in place changes what the caller holds, which is state the caller sees.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from fxlens.worker.fixes.coverage import covering
from fxlens.worker.passes.proof import ATOL, RTOL, draw, first_line

SEEDS = (0, 1, 2)
_PLAIN = (int, float, str, bool, type(None))


@dataclass
class Compared:
    failed: str = ""
    inputs: int = 0
    modes: tuple[str, ...] = ("eval",)
    outputs: str = "equal"  # "equal" | "close"
    max_abs_diff: float = 0.0
    state_equal: bool = True
    printed_equal: bool = True
    inputs_changed: tuple[str, ...] = ()  # declared by the rewrite, and found so
    unreached: list[int] = field(default_factory=list)  # lines the fix replaces that no input ran
    unvaried: list[int] = field(default_factory=list)  # loops whose count it replaces, run one number of times
    coverage_seconds: float = 0.0  # finding the inputs that run the replaced lines (part of the proof's cost)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch's kernels on one thread meanwhile. The proof runs forward on the example's small sizes, where a
    parallel kernel gains nothing and, on cores other work keeps busy (the editor's server, other traces), waits
    for its OpenMP threads: a Linear on (2, 8, 64) took 17 ms on two threads at load 2.5 on 2 cores, 15 µs on one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _real(value: Any) -> bool:
    leaves, _ = tree_flatten(value)
    return all(type(t) is torch.Tensor and t.device.type == "cpu" for t in leaves if isinstance(t, torch.Tensor))


def input_sets(example: Any) -> list[tuple[tuple, dict]]:
    """(args, kwargs) per run: the example's own values when they are real, then seeded draws."""
    given = (tuple(example.inputs or ()), dict(example.kwargs))
    sets = [given if _real(given) else draw(given, torch.Generator().manual_seed(SEEDS[0]))]
    sets += [draw(given, torch.Generator().manual_seed(seed)) for seed in SEEDS[1:]]
    return sets


def _copied(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, (args, kwargs))


def _call(module: torch.nn.Module, args: tuple, kwargs: dict, seed: int) -> tuple[Any, str]:
    """What the call returns, and what it printed and warned. `args`, `kwargs`: the call's own copies, which it
    may change."""
    printed = io.StringIO()
    with torch.no_grad(), contextlib.redirect_stdout(printed), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        # the CPU generator alone (what the CPU tensors compared draw from): torch.manual_seed seeds every device
        # kind too, and each of those records its caller's stack while its device is not initialised (0.1 ms a call)
        torch.default_generator.manual_seed(seed)
        out = module(*args, **kwargs)
    return out, printed.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in warned)


def state_of(module: torch.nn.Module) -> dict[str, Any]:
    state: dict[str, Any] = dict(module.state_dict(keep_vars=False))
    for name, sub in module.named_modules():
        for key, value in vars(sub).items():
            if isinstance(value, _PLAIN) or (isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)):
                state[f"{name}.{key}" if name else key] = value
    return state


def _same_state(a: dict[str, Any], b: dict[str, Any]) -> str:
    """ "" when equal, else the first entry that differs."""
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        same = torch.equal(x, y) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) else x == y
        if not same:
            return key
    return ""


def _arguments(module: torch.nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by forward's parameter names (by position where forward takes *args)."""
    try:
        return dict(inspect.signature(module.forward).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {**{f"argument {i + 1}": v for i, v in enumerate(args)}, **kwargs}


def _inputs_changed(module: torch.nn.Module, before: tuple[tuple, dict], after: tuple[tuple, dict]) -> list[str]:
    """The arguments whose tensors differ between the two calls' copies after them."""
    left, right = _arguments(module, *before), _arguments(module, *after)
    return [name for name in left if _diff(left[name], right.get(name))[0] not in ("equal", "close")]


def _diff(a: Any, b: Any) -> tuple[str, float]:
    """("equal" | "close" | why they differ, max |diff|)."""
    left, right = tree_flatten(a)[0], tree_flatten(b)[0]
    if len(left) != len(right):
        return f"it returns {len(right)} values instead of {len(left)}", math.inf
    verdict, largest = "equal", 0.0
    for index, (x, y) in enumerate(zip(left, right)):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            x, y = torch.as_tensor(x) if isinstance(y, torch.Tensor) else x, y
            if not isinstance(x, torch.Tensor):
                if x != y:
                    return f"output {index}: {x!r:.40} instead of {y!r:.40}", math.inf
                continue
        if x.shape != y.shape:
            return f"output {index}: shape {tuple(y.shape)} instead of {tuple(x.shape)}", math.inf
        if x.dtype != y.dtype:
            return f"output {index}: dtype {y.dtype} instead of {x.dtype}", math.inf
        if torch.equal(x, y):
            continue
        error = float((x.double() - y.double()).abs().nan_to_num(0.0).max()) if x.numel() else 0.0
        largest = max(largest, error)
        if not torch.allclose(x.double(), y.double(), rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"output {index}: max |diff| {error:.3g}", error
        verdict = "close"
    return verdict, largest


def compare(
    original: torch.nn.Module,
    fixed: torch.nn.Module,
    example: Any,
    may_change: tuple[str, ...] = (),
    path: str = "",
    lines: frozenset[int] = frozenset(),
    loops: frozenset[int] = frozenset(),
) -> Compared:
    """`may_change`: the arguments the rewrite declared the caller no longer sees changed. `lines`: the lines of
    `path` the fix replaces, each of which should run on some input compared; `loops`: the first body lines of
    the loops whose count it replaces, each of which should run two numbers of times (coverage.py)."""
    result = Compared()
    inputs_changed: set[str] = set()
    sets = input_sets(example)
    try:
        probe = copy.deepcopy(original)  # (a train run moves running statistics: the compared pair stays as built)
        evaluated, _ = _call(probe.eval(), *_copied(*sets[0]), SEEDS[0])
        trained, _ = _call(probe.train(), *_copied(*sets[0]), SEEDS[0])
        call = lambda inputs: _call(probe.eval(), *_copied(*inputs), SEEDS[0])  # noqa: E731
        started = time.perf_counter()
        added, unrun, unvaried = covering(call, path, sets, set(lines), loops)
        result.coverage_seconds = time.perf_counter() - started
    except Exception as error:  # noqa: BLE001  the user's forward on real tensors: the proof cannot run
        result.failed = f"the original module does not run on CPU tensors ({first_line(error)})"
        return result
    result.unreached = sorted(unrun)  # (a branch no input takes, as `if x.abs().max() > 2` after a norm: said)
    result.unvaried = sorted(unvaried)
    sets += added
    result.modes = ("eval", "train") if _diff(evaluated, trained)[0] != "equal" else ("eval",)
    for mode in result.modes:
        original.train(mode == "train")
        fixed.train(mode == "train")
        for index, (args, kwargs) in enumerate(sets):
            seed = SEEDS[index] if index < len(SEEDS) else index  # (a variant coverage.py added)
            given, given_fixed = _copied(args, kwargs), _copied(args, kwargs)
            before, said = _call(original, *given, seed)
            try:
                after, said_fixed = _call(fixed, *given_fixed, seed)
            except Exception as error:  # noqa: BLE001  the fixed code raising is the verdict
                result.failed = f"the fixed module raises on input {index + 1} ({mode}): {first_line(error)}"
                return result
            verdict, largest = _diff(before, after)
            result.max_abs_diff = max(result.max_abs_diff, largest if math.isfinite(largest) else 0.0)
            if verdict not in ("equal", "close"):
                result.failed = f"outputs differ on input {index + 1} ({mode}): {verdict}"
                return result
            if verdict == "close":
                result.outputs = "close"
            changed = _same_state(state_of(original), state_of(fixed))
            if changed:
                result.state_equal = False
                result.failed = f"module state differs after input {index + 1} ({mode}): `{changed}`"
                return result
            differ = _inputs_changed(original, given, given_fixed)
            unsaid = [name for name in differ if name not in may_change]
            if unsaid:
                result.failed = (
                    f"the caller's `{unsaid[0]}` after the call differs on input {index + 1} ({mode}): "
                    "the original updates it in place and the fix does not, or the other way round"
                )
                return result
            inputs_changed.update(differ)
            if said != said_fixed:
                result.printed_equal = False
                result.failed = f"what the call prints or warns differs on input {index + 1} ({mode})"
                return result
    result.inputs = len(sets)
    result.inputs_changed = tuple(name for name in may_change if name in inputs_changed)
    return result

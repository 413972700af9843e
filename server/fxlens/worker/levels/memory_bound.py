"""The bound on the real memory a guess may cost (`fxlens.guessMemoryMB`, `--guess-memory`).

fxlens builds modules on the meta device and runs them on meta or fake tensors; real memory is spent only
where that fails: a constructor that allocates by itself (NumPy, `device="cpu"`), a module rebuilt on the
CPU for code that reads values. A guess (arguments nobody chose, a default `max_len` of a million) must
never cost more than a user's own small run, so each such step runs under the bound:

- before real weights are made, a byte count of the meta module's parameters, buffers and tensor attributes
  (`estimated_bytes`) says whether they fit;
- while the step runs, the process's address-space limit is lowered to what is mapped now plus the bound,
  so an allocation past it fails at once (in torch, NumPy or Python) instead of paging for half a minute;
  such a failure becomes `OverBound`, which says so in words.

The trace's own memory limit (`fxlens.memoryLimitMB`, the trace child's hard address-space limit) holds too:
where less of it is left than the guess bound, what is left is the bound, and the words name that setting.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

MEGABYTE = 1 << 20


@dataclass(frozen=True)
class Bound:
    """The real memory a guess may take, and the setting that bounds it."""

    megabytes: int
    setting: str  # "guessMemoryMB" | "memoryLimitMB"

    def words(self) -> str:
        if self.setting == "memoryLimitMB":
            left = f"the {self.megabytes:,} MB of real memory left"
            return f"{left} under the trace's memory limit (`fxlens.memoryLimitMB`)"
        return f"the {self.megabytes:,} MB of real memory fxlens may spend on a guess (`fxlens.guessMemoryMB`)"

    def fix(self) -> str:
        if self.setting == "memoryLimitMB":
            return "raise the trace's memory limit (`fxlens.memoryLimitMB`)"
        return "raise the bound (`fxlens.guessMemoryMB`, `--guess-memory MB`)"


def bound_for(megabytes: int) -> Bound:
    """The guess bound `megabytes`, or what the trace's memory limit leaves of the address space when that is
    less. The trace's limit is the hard one (process/child.py sets it); `limited` lowers only the soft one."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        left = max(hard - _mapped_bytes(), 0) // MEGABYTE
        if left < megabytes:
            return Bound(left, "memoryLimitMB")
    return Bound(megabytes, "guessMemoryMB")


class OverBound(BaseException):
    """A step ran out of the memory bound. A BaseException: the loops that try guess after guess (each
    catching the user's constructor's `Exception`) stop at the first, as a larger guess would only cost more."""

    def __init__(self, bound: Bound | None, error: BaseException | None, needed: int | None = None) -> None:
        self.bound, self.error, self.needed = bound, error, needed
        super().__init__(self.words())

    def words(self) -> str:
        if self.needed is not None:
            return f"its tensors would take {self.needed / MEGABYTE:,.0f} MB of real memory"
        if self.error is None:
            return "it ran out"
        first = str(self.error).strip().split("\n")[0][:200]
        return f"it tried to allocate more ({type(self.error).__name__}{': ' + first if first else ''})"


def cannot_allocate(error: BaseException) -> bool:
    """Whether `error` is an allocation that failed (Python's, NumPy's or torch's CPU allocator's)."""
    return isinstance(error, MemoryError) or "can't allocate memory" in str(error)


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


@contextmanager
def limited(megabytes: int | None) -> Iterator[Bound | None]:
    """Run the block with at most `megabytes` more address space than is mapped now (never more than the
    limit already set); an allocation failing inside becomes OverBound. The hard limit is left alone, so
    the soft one is restored after. None: no bound (a directive's build, the user's own sizes), and an
    allocation that fails inside (past the trace's memory limit) stays the user's code's own error."""
    if megabytes is None:
        try:
            yield None
        except OverBound as over:  # (raised where the bound is not known: construction's on_device)
            if over.bound is not None or over.error is None:
                raise
            raise over.error from None
        return
    bound = bound_for(megabytes)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped_bytes() + bound.megabytes * MEGABYTE
    lowered = soft == resource.RLIM_INFINITY or limit < soft
    if lowered:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        except (ValueError, OSError):
            lowered = False  # a sandbox refusing it: the trace's own memory limit still applies
    try:
        yield bound
    except OverBound as over:
        if over.bound is None:  # (raised where the bound is not known: construction's on_device)
            over.bound = bound
        raise
    except Exception as error:
        if cannot_allocate(error):
            raise OverBound(bound, error) from error
        raise
    finally:
        if lowered:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def estimated_bytes(module: nn.Module) -> int:
    """What real copies of the module's tensors take: parameters, buffers and tensors kept as plain
    attributes (a rotary table `self.cos_cached = ...`), each counted once."""
    seen: dict[int, int] = {}
    for sub in module.modules():
        tensors: list[Any] = [*sub._parameters.values(), *sub._buffers.values(), *vars(sub).values()]
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and not is_lazy(tensor) and id(tensor) not in seen:
                seen[id(tensor)] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


class BoundedRebuild:
    """A module built on meta made again on the CPU (its own initial weights), under the bound; once."""

    def __init__(self, make: Callable[[], nn.Module], megabytes: int) -> None:
        self.make, self.megabytes = make, megabytes
        self._made: nn.Module | None = None

    def __call__(self) -> nn.Module:
        if self._made is None:
            with limited(self.megabytes):
                self._made = self.make()
        return self._made

    def part(self, path: str) -> BoundedRebuild:
        """The submodule at `path` of the rebuilt module, under the same bound."""
        return BoundedRebuild(lambda: self().get_submodule(path), self.megabytes)


def bound_of(rebuild: Any) -> int | None:
    """The bound a rebuild carries (None: a caller that set none)."""
    return rebuild.megabytes if isinstance(rebuild, BoundedRebuild) else None

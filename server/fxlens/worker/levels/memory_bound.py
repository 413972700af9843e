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
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

MEGABYTE = 1 << 20


class OverBound(BaseException):
    """A step ran out of the memory bound. A BaseException: the loops that try guess after guess (each
    catching the user's constructor's `Exception`) stop at the first, as a larger guess would only cost more."""

    def __init__(self, megabytes: int | None, error: BaseException | None, needed: int | None = None) -> None:
        self.megabytes, self.error, self.needed = megabytes, error, needed
        super().__init__(self.words())

    def words(self) -> str:
        if self.needed is not None:
            return f"its tensors would take {self.needed / MEGABYTE:,.0f} MB of real memory"
        first = str(self.error).strip().split("\n")[0][:200] if self.error is not None else ""
        return f"it tried to allocate more ({type(self.error).__name__}: {first})" if first else "it ran out"


def limit_words(megabytes: int) -> str:
    return f"the {megabytes:,} MB of real memory fxlens may spend on a guess (`fxlens.guessMemoryMB`)"


def cannot_allocate(error: BaseException) -> bool:
    """Whether `error` is an allocation that failed (Python's, NumPy's or torch's CPU allocator's)."""
    return isinstance(error, MemoryError) or "can't allocate memory" in str(error)


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


@contextmanager
def limited(megabytes: int) -> Iterator[None]:
    """Run the block with at most `megabytes` more address space than is mapped now (never more than the
    limit already set); an allocation failing inside becomes OverBound. The hard limit is left alone, so
    the soft one is restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped_bytes() + megabytes * MEGABYTE
    lowered = soft == resource.RLIM_INFINITY or limit < soft
    if lowered:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        except (ValueError, OSError):
            lowered = False  # a sandbox refusing it: the trace's own memory limit still applies
    try:
        yield
    except OverBound as over:
        if over.megabytes is None:  # (raised where the bound is not known: construction's on_device)
            over.megabytes = megabytes
        raise
    except Exception as error:
        if cannot_allocate(error):
            raise OverBound(megabytes, error) from error
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

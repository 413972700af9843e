"""A trace request as the warm worker runs it: the request with its options bounded, the job that follows its
child from fork to reaping, and the warm-up recipes a finished job leaves for the next standby child.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from fxlens import messages
from fxlens.worker.load import imports
from fxlens.worker.process import isolation

DEFAULT_TIMEOUT = 60.0
# a standby child warms up on (warm_up.py) at most this much of the last trace's exports: a request that comes
# meanwhile waits for the graph being exported
WARM_UP_SECONDS = 0.25
# (what a child sends may come from user code: the worker keeps a bounded amount)
MAX_RECIPES = 8
MAX_RECIPE_BYTES = 4 << 20  # a 3,000-node graph (warm_up.MAX_NODES) takes well under 1 MB


@dataclass
class Job:
    id: int
    request: messages.TraceRequest
    pid: int = 0
    read_fd: int = -1
    pieces: list = field(default_factory=list)  # bytes of the event being received
    deadline: float = 0.0
    dump_fd: int = -1
    done: bool = False
    aborted: dict | None = None  # the diagnostic a child sent before giving up
    rss_at_fork_kb: int = 0
    recipes: list = field(default_factory=list)  # its exports' graphs, for warming up the next trace
    started: bool = False  # the child said it read the request: from here on, its death is the trace's
    attempt: int = 1
    location: isolation.ChildLocation | None = None
    deaf: bool = False  # the child closed its channel (and may open it again): watched by polling
    # past its `done`, counting the classes' costs (`cost` events, then `end`): a new trace may take its place
    tail: bool = False

    def proof_deadline(self) -> float:
        """When the proof of a fix the child runs must end (worker/fixes/find.py); infinity when none runs."""
        fix_id, deadline, _, _ = self.location.proof() if self.location is not None else ("", 0.0, 0.0, "")
        return deadline if fix_id else math.inf


def _number(value: float | None, default: float, low: float, high: float) -> float:
    """A request option within bounds, or its default when missing or nonsense (messages.TraceRequest has
    already read a value of the wrong kind as None)."""
    if value is None or value != value or value < low:  # missing, NaN, negative, zero
        return default
    return min(float(value), high)  # "never" (inf, 1e300) is the largest sane value, not an overflow


def normalise(request: messages.TraceRequest) -> messages.TraceRequest:
    """The request with its texts in it, its limits within bounds and only the folders and buffers that can be
    imported (messages.TraceRequest already reads a value of the wrong kind as its default)."""
    if request.text is None:
        raise ValueError("a trace request needs its `text`")
    return replace(
        request,
        timeout=_number(request.timeout, DEFAULT_TIMEOUT, 0.01, 7 * 86400.0),
        memory_mb=int(_number(request.memory_mb, isolation.DEFAULT_MEMORY_MB, 0, float(1 << 30))),
        guess_memory_mb=int(_number(request.guess_memory_mb, messages.DEFAULT_GUESS_MEMORY_MB, 1, float(1 << 30))),
        roots=imports.valid_roots(request.roots),
        buffers=imports.valid_buffers(request.buffers),
    )


def worth_warming_up(recipes: list[dict]) -> list[dict]:
    """The first recipes (the class at the cursor comes first) whose exports fit in the warm-up time."""
    kept, seconds = [], 0.0
    for recipe in recipes[:MAX_RECIPES]:
        seconds += recipe["seconds"]
        if seconds > WARM_UP_SECONDS:
            break
        kept.append(recipe)
    return kept

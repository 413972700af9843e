"""What a caller asks of the worker client for one trace: the options, the scope, who hears its events; and the
request that says it to the worker."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from fxlens.engine.late_costs import OnCost
from fxlens.messages import DEFAULT_GUESS_MEMORY_MB, TraceRequest
from fxlens.report import DEFAULT_LEVELS, ClassReport


@dataclass
class TraceOptions:
    levels: tuple[str, ...] = DEFAULT_LEVELS
    execution: str = "safe"
    timeout: float = 60.0
    memory_mb: int = 4096
    # the real memory fxlens may spend on a guess: a build without a directive, CPU tensors for a meta module
    guess_memory_mb: int = DEFAULT_GUESS_MEMORY_MB
    # where the report is read: "editor" or "cli", whose words a fix uses (a setting or a flag)
    surface: str = "editor"
    # the class cost (parameters, FLOPs forward and backward: FlopCounterMode runs the class once more),
    # for callers that show it (lenses, hovers, `fxlens graph`); `fxlens check` and `diff` never do
    cost: bool = True
    # the findings' rewrites, each proven on a copy of the buffer (`fxlens check --fix`, the quick fixes)
    fixes: bool = False

    @classmethod
    def from_flags(
        cls, flags: argparse.Namespace, levels: tuple[str, ...], surface: str = "cli", **rest: bool
    ) -> TraceOptions:
        """A command line's options: the flags every tracing command takes (`--execution`, `--timeout`,
        `--guess-memory`: cli/app.py), the command's levels and surface, and `rest` (`cost=`, `fixes=`)."""
        return cls(
            levels=levels,
            execution=flags.execution,
            timeout=flags.timeout,
            guess_memory_mb=flags.guess_memory,
            surface=surface,
            **rest,
        )


OnClass = Callable[[ClassReport], None]
# the worker's `stage` event: every class of the request now has these (cheap) levels; the deeper follow
OnStage = Callable[[list[str]], None]


@dataclass
class TraceAsk:
    """What a trace request asks for beyond the buffer and the options (see WorkerClient.submit)."""

    first: str | None = None  # the class traced first (the cursor's)
    classes: list[str] | None = None  # only these (and what builds them); None: every class
    known: dict[str, str] = field(default_factory=dict)  # class -> fingerprint of a trace the caller holds
    roots: list[str] = field(default_factory=list)  # folders to make importable (workspace folders)
    buffers: dict[str, str] = field(default_factory=dict)  # path -> text of other open buffers
    notes: bool = True  # False: the caller holds the cheap levels and asks for deeper ones only
    without_cost: list[str] = field(default_factory=list)  # classes held unchanged whose cost never came


@dataclass
class Listeners:
    """Who hears a request's events before its result: each class, the cheap levels' end, each late cost."""

    on_class: OnClass | None = None
    on_stage: OnStage | None = None
    on_cost: OnCost | None = None
    # the request's costs are over: each came, or the worker stopped counting them (a trace that needed its place,
    # the time limit, a crash); only with on_cost
    on_costs_end: Callable[[], None] | None = None


def trace_request(path: str, text: str, options: TraceOptions, ask: TraceAsk) -> TraceRequest:
    """The request for one buffer that `WorkerClient.submit` sends, its paths made absolute."""
    return TraceRequest(
        os.path.abspath(path),
        text=text,
        levels=list(options.levels),
        execution=options.execution,
        timeout=options.timeout,
        memory_mb=options.memory_mb,
        guess_memory_mb=options.guess_memory_mb,
        surface=options.surface,
        cost=options.cost,
        first=ask.first,
        classes=ask.classes,
        known=ask.known,
        roots=[os.path.abspath(r) for r in ask.roots],
        buffers={os.path.abspath(p): t for p, t in ask.buffers.items()},
        notes=ask.notes,
        without_cost=list(ask.without_cost),
        fixes=options.fixes,
    )

"""The levels as the server, the CLI and the renderers know them: each level's name, what it shows, whether it is
traced by default, and the two orders they come in (the ladder, as displayed; TRACE_ORDER, as traced). The
worker's table (worker/levels/table.py) holds how each is traced.

Stdlib only, like report.py (which names these too): both sides import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

_Result = TypeVar("_Result")


@dataclass(frozen=True)
class LevelInfo:
    """What the server knows of a level: the worker's table (worker/levels/table.py) holds how it is traced."""

    name: str
    what: str  # one line, for help texts and the README's table
    default: bool  # traced unless the user's `fxlens.levels` / `--level` says otherwise
    # the hover shows it as columns side by side (fx and aten are the same computation, row for row);
    # a folded level gets one line per cursor line: its node count and ops
    columns: bool
    # takes seconds on big models: traced only after every class's cheap levels are published, and
    # only when asked for (settings, CLI) or wanted (a hover, the graph view); see TRACE_ORDER
    deep: bool = False
    # a deep level a hover starts when the settings do not trace it; one that costs seconds of CPU per class
    # (inductor's compile) is computed only when asked for: the settings, the CLI, the graph view
    on_hover: bool = True


# As displayed, the lesson's ladder, top down: symbolic_trace -> dynamo -> (aot_autograd) export ->
# decompositions -> the joint graph. Each rung uses fewer opcodes than the one above it.
LEVEL_INFO = (
    LevelInfo("fx", "symbolic_trace: torch.nn modules are leaves (call_module fc, call_method view)", True, True),
    LevelInfo(
        "dynamo",
        "torch._dynamo.explain: the graphs torch.compile captures, graph breaks as warnings",
        False,
        False,
        deep=True,
    ),
    LevelInfo("aten", "torch.export, non-strict, training IR (aten.linear.default)", True, True),
    LevelInfo(
        "core-aten",
        "the exported program after run_decompositions() (aten.permute.default + aten.addmm.default)",
        False,
        False,
        deep=True,
    ),
    LevelInfo(
        "backward",
        "aot_autograd's joint graph split into forward and backward as torch.compile does; "
        "what the forward saves for backward",
        False,
        False,
        deep=True,
    ),
    LevelInfo(
        "inductor",
        "torch.compile's forward kernels for this machine (C++ on CPU, Triton on a GPU): each "
        "generated kernel, library call and fallback, mapped to your lines by inductor's provenance",
        False,
        False,
        deep=True,
        on_hover=False,
    ),
)
LEVELS = tuple(info.name for info in LEVEL_INFO)  # display order (the ladder)
DEFAULT_LEVELS = tuple(info.name for info in LEVEL_INFO if info.default)
COLUMN_LEVELS = tuple(info.name for info in LEVEL_INFO if info.columns)
DEEP_LEVELS = tuple(info.name for info in LEVEL_INFO if info.deep)
HOVER_LEVELS = tuple(info.name for info in LEVEL_INFO if info.deep and info.on_hover)  # what a hover starts
# As traced, which differs: the cheap levels of every class first (published before any deeper one
# starts), then core-aten and backward, which reuse the aten level's exported program, then dynamo,
# which shares nothing with them and costs the most (its own import, a run of the real code), then
# inductor, which compiles what dynamo captures (seconds, even without building a kernel).
TRACE_ORDER = ("fx", "aten", "core-aten", "backward", "dynamo", "inductor")
assert sorted(TRACE_ORDER) == sorted(LEVELS), "every level has its place in both orders"
# the compile levels whose hang or crash costs only that level of a class (worker/process/lost_levels.py), and the
# levels lost with each: inductor compiles what dynamo captures, through the same run of the code
LEVELS_LOST_WITH = {"dynamo": ("dynamo", "inductor"), "inductor": ("inductor",)}


def in_ladder_order(levels: Any) -> tuple[str, ...]:
    """The known levels among `levels`, once each, in display order (top of the ladder first)."""
    wanted = set(levels)
    return tuple(name for name in LEVELS if name in wanted)


def ladder_sorted(levels: dict[str, _Result]) -> dict[str, _Result]:
    """A class's levels (name -> result) in display order, whatever order they were traced in."""
    rank = {name: index for index, name in enumerate(LEVELS)}
    return {name: levels[name] for name in sorted(levels, key=lambda name: rank.get(name, len(rank)))}


def in_trace_order(levels: Any) -> tuple[str, ...]:
    """The known levels among `levels`, once each, in the order a trace runs them (TRACE_ORDER)."""
    wanted = set(levels)
    return tuple(name for name in TRACE_ORDER if name in wanted)

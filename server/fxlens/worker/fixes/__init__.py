"""Fixes that prove themselves: one module per rewrite of a finding, registered in TABLE below, and the proof
each rewrite must pass before it is offered (proof.py: the finding gone at its level, no new one, outputs and
module state unchanged on three inputs, outputs.py).

Rewrites are tried in TABLE's order on each finding; the first that recognises the site proposes edits (or
declines, saying why no rewrite keeps the semantics, and the next is tried). `find.fixes_for` runs them for one
traced class.

May import: passes (the proof's draws, the CPU rebuild), levels, load, failures, and the shared modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fxlens.worker.fixes import (
    assert_,
    builtin_ops,
    cond,
    defaults,
    guard,
    in_place,
    item,
    length,
    loop_count,
    numpy_ops,
    round_trip,
    where,
    wrap,
)
from fxlens.worker.fixes.sites import Declined, Rewrite, Site


@dataclass(frozen=True)
class Entry:
    name: str
    applies: Callable[[Site], bool]  # the finding is of a kind this rewrite knows
    propose: Callable[[Site], Rewrite | Declined | None]  # None: not this rewrite's site


# builtin min/max first: the `if` a comparison inside them raises is theirs, not an `if` of the user's
TABLE: tuple[Entry, ...] = (
    Entry("builtin-op", builtin_ops.applies, builtin_ops.propose),
    Entry("skip-while-compiling", guard.applies, guard.propose),
    # before keep-tensor and round-trip: `float(np.percentile(t.numpy(), 95))` is theirs only in part
    Entry("numpy-op", numpy_ops.applies, numpy_ops.propose),
    Entry("keep-tensor", item.applies, item.propose),
    Entry("loop-count", loop_count.applies, loop_count.propose),
    Entry("round-trip", round_trip.applies, round_trip.propose),
    Entry("torch-assert", assert_.applies, assert_.propose),
    Entry("shape-not-len", length.applies, length.propose),
    Entry("default-none", defaults.applies, defaults.propose),
    Entry("out-of-place", in_place.applies, in_place.propose),
    Entry("torch-where", where.applies, where.propose),
    # after torch.where: where both fit, computing both cheap sides beats a branch fx cannot trace
    Entry("torch-cond", cond.applies, cond.propose),
    # last: where a rewrite of the helper's own code keeps its ops in the graph, that one is better
    Entry("fx-wrap", wrap.applies, wrap.propose),
)

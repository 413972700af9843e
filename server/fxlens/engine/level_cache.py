"""The levels computed on demand (a hover, the graph view), kept per class fingerprint.

A class's fingerprint (worker/load/fingerprint.py) names everything its trace depends on, at every level
alike: while it stands, a level computed for it once still holds, whatever else the file's edits did
(another class changed, lines moved above it, the file re-traced from scratch, an edit undone). An edit
that changes the fingerprint finds nothing here. A class without a fingerprint is kept for its exact
text only.

An optimisation on top of the core: the scheduler knows nothing of it and is handed `attach`.
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from fxlens.engine.shift import LineMap, shift_class
from fxlens.report import ClassReport, LevelResult, ladder_sorted

MAX_CLASSES = 64  # a deep level of a big model is megabytes of nodes: keep the recent ones


@dataclass
class Held:
    text: str  # the buffer text the levels were traced from (their lines are that text's)
    report: ClassReport  # the class with only the levels computed on demand


def key(path: str, cls: ClassReport, text: str) -> tuple[str, str, str]:
    """Per file too: the same class text in two files gives the same fingerprint, not the same lines."""
    if cls.fingerprint:
        return path, cls.name, cls.fingerprint
    return path, cls.name, "text:" + hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class LevelCache:
    def __init__(self, size: int = MAX_CLASSES) -> None:
        self.size = size
        self._held: OrderedDict[tuple[str, str, str], Held] = OrderedDict()

    def put(self, path: str, traced: ClassReport, text: str, levels: dict[str, LevelResult]) -> None:
        """Keep `levels` of the class as traced from `text` (added to what is already held for it)."""
        k = key(path, traced, text)
        held = self._held.pop(k, None)
        report = copy.copy(traced)
        # (a held class whose `class` line was edited since cannot be carried over: its levels are dropped)
        moved = shift_class(held.report, LineMap(held.text, text)) if held else None
        report.levels = {**(moved.levels if moved else {}), **levels}
        self._held[k] = Held(text, report)
        while len(self._held) > self.size:
            self._held.popitem(last=False)

    def attach(self, path: str, cls: ClassReport, text: str) -> ClassReport:
        """`cls` (traced from `text`) with the levels held for its fingerprint that it lacks, their
        positions carried to `text`; `cls` itself when there are none (reports are never mutated)."""
        k = key(path, cls, text)
        held = self._held.get(k)
        if held is None or all(level in cls.levels for level in held.report.levels):
            return cls
        self._held.move_to_end(k)
        moved = shift_class(held.report, LineMap(held.text, text))
        if moved is None:  # its `class` line was edited: the fingerprint says the same, the lines do not
            return cls
        fuller = copy.copy(cls)
        fuller.levels = ladder_sorted({**moved.levels, **cls.levels})
        return fuller

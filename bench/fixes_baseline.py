"""What fxlens itself spends to give each class its fx level, the trace child's work, measured in one process:

    python bench/fixes_baseline.py FILE...

Each file is analysed at fx alone as `fxlens check --level fx` asks (no fixes, no cost), twice (the first run
pays torch's lazy imports, which a warm worker has paid); of the second run, per class: `work`, every step of that
class (the instance built, its example inputs found, its fingerprint, the fx level: symbolic_trace and shapes
propagated, and its report), and `trace`, the fx level's own seconds (what a proof's `trace_seconds` holds). Prints
one JSON object: {file name: {class: {"work": seconds, "trace": seconds}}}.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from fxlens.messages import ClassTraced
from fxlens.worker.analysis.analyse import Analysis
from fxlens.worker_requests import TraceRequest


def _classes(path: Path) -> dict[str, dict[str, float]]:
    work: dict[str, float] = {}
    current: list = ["", 0.0]

    def at_class(name: str) -> None:  # told before and after each step of a class (analysis._at)
        now = time.perf_counter()
        if current[0]:
            work[current[0]] = work.get(current[0], 0.0) + now - current[1]
        current[:] = [name, now]

    events: list = []
    request = TraceRequest(str(path), text=path.read_text(), levels=["fx"], surface="check", cost=False)
    analysis = Analysis(request)
    analysis.at_class = at_class
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        analysis.run(events.append)
    traces = {
        report.name: report.levels["fx"].seconds
        for report in (e.read() for e in events if isinstance(e, ClassTraced))
        if "fx" in report.levels
    }
    return {name: {"work": work.get(name, 0.0), "trace": seconds} for name, seconds in traces.items()}


def main() -> None:
    found = {}
    for name in sys.argv[1:]:
        path = Path(name).resolve()
        _classes(path)
        found[path.name] = _classes(path)
    print(json.dumps(found))


if __name__ == "__main__":
    main()

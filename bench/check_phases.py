"""Where `fxlens check`'s time goes on the real-model tree of tests/fixtures/repos (bench/check_tree.py's
files): each file analysed as a trace child analyses it (worker/analysis/analyse.py), in one process with
torch warm, one file after another, with a timer around each phase: loading the file, building every class
(directives, guessed arguments and inputs), the fx level, the aten level's own export, the second export
with B doubled and T tripled (run here in this process instead of in a forked process, so that its time is its own),
and the class cost (FlopCounterMode forward and backward). Sums over the tree, the median of `runs`.

    python bench/check_phases.py [runs] [--without-device-mode] [--as-check]   (prints JSON)

`--as-check` asks as `fxlens check` does (surface "check", no class cost): sizes are not named, and the scaled
export runs only where the eager size probe (worker/levels/size_probe.py, timed on its own) says the graph
could depend on a size.

`--without-device-mode` leaves out the missing-accelerator TorchFunctionMode every analysis runs under, to
measure what it costs (the reports may then differ for code that asks for a GPU).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "server"))
from check_tree import REPOS  # noqa: E402
from reach import CORPUS  # noqa: E402

PHASES = ("load", "build", "fx", "aten export", "aten scaled export", "cost", "rest")


def _timed(owner, name: str, into: dict, phase: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[phase] += time.perf_counter() - start

    setattr(owner, name, wrapper)


def _instrument(into: dict) -> None:
    from fxlens.worker.analysis import analyse
    from fxlens.worker.levels import aten, forked, table
    from fxlens.worker.load import loader

    _timed(loader, "load", into, "load")
    _timed(analyse.Analysis, "_build_all", into, "build")
    _timed(analyse, "class_cost", into, "cost")
    fx_run = table.TABLE["fx"]
    aten_run = table.TABLE["aten"]

    def fx_level(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fx_run(*args, **kwargs)
        finally:
            into["fx"] += time.perf_counter() - start

    def aten_level(*args, **kwargs):
        start, scaled_before = time.perf_counter(), into["aten scaled export"]
        try:
            return aten_run(*args, **kwargs)
        finally:  # the scaled export runs inside it here (not forked): counted on its own
            into["aten export"] += time.perf_counter() - start - (into["aten scaled export"] - scaled_before)

    table.TABLE["fx"], table.TABLE["aten"] = fx_level, aten_level

    def no_fork(self) -> None:  # the work runs in this process when its result is asked for
        raise OSError("timed in this process")

    forked.ForkedCall._fork = no_fork
    work_result = forked.ForkedCall.result

    def result(self):
        start = time.perf_counter()
        try:
            return work_result(self)
        finally:
            into["aten scaled export"] += time.perf_counter() - start

    forked.ForkedCall.result = result
    # inside the aten level: torch.export itself (each try, on meta then fake or real tensors), the rest
    export = aten.export

    def timed_export(*args, **kwargs):
        start = time.perf_counter()
        try:
            return export(*args, **kwargs)
        finally:
            into["torch.export calls"] += time.perf_counter() - start
            into["torch.export count"] += 1

    aten.export = timed_export
    _timed(aten, "nodes_of", into, "aten: nodes mapped to lines")
    _timed(aten.specialise, "hints", into, "aten: specialisation hints")
    _timed(aten.overloads, "add_flops", into, "aten: per-node FLOPs")
    _timed(aten.size_probe, "could_depend", into, "aten: size probe (as a check)")


def _without_the_device_mode() -> None:
    """Only for measuring what it costs: the missing-accelerator TorchFunctionMode (construction/default_device)
    left out, so that no torch call of the analysis goes through Python."""
    from fxlens.worker.construction import default_device

    @contextlib.contextmanager
    def intercepted(path):
        yield default_device.Asked(path)

    default_device.intercepted = intercepted


def one_run() -> dict:
    from fxlens.messages import TraceRequest
    from fxlens.worker.analysis.analyse import Analysis

    if "--without-device-mode" in sys.argv:
        _without_the_device_mode()
    spent: dict = defaultdict(float)
    _instrument(spent)
    total = 0.0
    classes = 0
    for model in CORPUS:
        path = str((REPOS / model.file.relative_to(REPOS)).resolve())
        as_check = "--as-check" in sys.argv
        request = TraceRequest(
            path,
            text=Path(path).read_text(),
            levels=["fx", "aten"],
            execution="safe",
            surface="check" if as_check else "editor",
            cost=not as_check,
            roots=[str((model.root / folder).resolve()) for folder in model.sys_path],
        )
        analysis = Analysis(request)
        start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):
            report = analysis.run(lambda event: None)
        total += time.perf_counter() - start
        classes += len(report.module_classes)
    spent["rest"] = total - sum(spent[p] for p in PHASES if p != "rest")
    return {
        "total": total,
        "classes": classes,
        **{p: spent[p] for p in PHASES},
        "detail": {k: v for k, v in spent.items() if k not in PHASES},
    }


def main(runs: int, *options: str) -> dict:
    import subprocess

    measured = []
    for _ in range(runs):  # each run in a fresh process: the phases' first calls included, as in a check
        done = subprocess.run([sys.executable, __file__, "--one", *options], capture_output=True, text=True, cwd=REPOS)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        measured.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {key: statistics.median(m[key] for m in measured) for key in ("total", *PHASES)}
    return {
        "runs": runs,
        "classes": measured[0]["classes"],
        "median_s": medians,
        "share": {p: medians[p] / medians["total"] for p in PHASES},
        "each_run": measured,
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        sys.path[:0] = sorted({str((m.root / f).resolve()) for m in CORPUS for f in m.sys_path})
        print(json.dumps(one_run()))
    else:
        numbers = [a for a in sys.argv[1:] if a.isdigit()]
        print(
            json.dumps(main(int(numbers[0]) if numbers else 3, *[a for a in sys.argv[1:] if not a.isdigit()]), indent=1)
        )

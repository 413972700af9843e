"""`python -m bench NAME [ARGS...]`, from the repository's root: runs one benchmark; `python -m bench` lists them.

Each benchmark is a script of this folder, run as `python bench/SCRIPT ARGS...` runs it (the folder first on
sys.path, the script as `__main__`), so that what it measures does not depend on how it was started. What each
measures, against what and its target: bench/README.md; the numbers: bench/RESULTS.md."""

from __future__ import annotations

import runpy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Benchmark:
    script: str  # in bench/; a `.mjs` script runs under node
    measures: str


BENCHMARKS = {
    "suite": Benchmark(
        "run.py",
        "hover, edit → result, cold start, scale, hover under load, a tree's check, big files "
        "(issue 6's targets; writes its sections of RESULTS.md)",
    ),
    "engine": Benchmark("engine.py", "a full report (fx + aten, with shapes) against raw torch doing the same work"),
    "big-files": Benchmark("big_files.py", "hover right after an edit in a 10,000-line and a 5 MB file (< 50 ms)"),
    "check-phases": Benchmark("check_phases.py", "where `fxlens check`'s time goes on the real-model tree, by phase"),
    "cost-after-done": Benchmark(
        "cost_after_done.py", "an edit's report with the class cost on and off (the report must not wait for the cost)"
    ),
    "edit-checkouts": Benchmark("edit_checkouts.py", "an edit's trace, two checkouts' workers in turns, and raw torch"),
    "many-classes": Benchmark("many_classes.py", "one file of many classes traced by two checkouts in turns"),
    "lazy": Benchmark("lazy.py", "fx/aten edit → result with the deeper levels on and off (unchanged)"),
    "core-aten": Benchmark("core_aten.py", "the core-aten level against raw run_decompositions (≤ 1.3×)"),
    "dynamo": Benchmark("dynamo.py", "the dynamo level against raw torch._dynamo.explain (≤ 1.3×)"),
    "inductor": Benchmark("inductor.py", "the inductor level against raw torch.compile(m)(x), cold and warm (≤ 1.2×)"),
    "overloads": Benchmark("overloads.py", "what the overload table and per-node FLOPs add to the aten levels"),
    "reach": Benchmark("reach.py", "classes of tests/fixtures/repos fxlens shows a graph for, against raw torch"),
    "reach-packages": Benchmark(
        "reach_packages.py",
        "classes of pip-installed model files fxlens shows a graph for, against raw torch (fx ≥ 90 %, aten ≥ 80 %)",
    ),
    "reach-research": Benchmark(
        "reach_research.py",
        "classes of tests/fixtures/research (research-style code) fxlens shows a graph for, against raw torch, "
        "with per-file time and peak memory and what each mechanism won (fx ≥ 90 %, aten ≥ 90 %)",
    ),
    "fixes": Benchmark(
        "fixes.py",
        "sites of tests/fixtures/fixes with a proven fix (≥ 80 %), proven fixes failing an independent raw-torch "
        "check (0), a proof's cost against its class's trace (≤ 2×)",
    ),
    "graph-view-reports": Benchmark(
        "graph_view_reports.py",
        "writes the graph view's payloads of the bench models (graph-view's input), with --time their render time",
    ),
    "graph-view": Benchmark(
        "graph_view.mjs",
        "the graph view in headless Chromium, report → drawn graph (after `npm run build` in vscode-client)",
    ),
}


def listing() -> str:
    width = max(map(len, BENCHMARKS))
    rows = [f"  {name:<{width}}  {benchmark.measures}" for name, benchmark in BENCHMARKS.items()]
    return "\n".join(
        [
            "usage: python -m bench NAME [ARGS...]   (bench/README.md: what each measures, against what, "
            "its target, its arguments)",
            "",
            *rows,
        ]
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    name, *args = argv
    if name not in BENCHMARKS:
        print(f"python -m bench: no benchmark {name!r}\n\n{listing()}", file=sys.stderr)
        return 2
    script = BENCH / BENCHMARKS[name].script
    if script.suffix == ".mjs":
        return subprocess.run(["node", str(script), *args]).returncode
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(BENCH))
    runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

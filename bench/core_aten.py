"""The core-aten level's cost against raw torch, in one process, medians (issue 12: within 1.3x).

    python bench/core_aten.py [MODEL_KEY] [--runs N]     # default gpt2-12, 5 runs

Rows: `reuse` = fxlens's core-aten level decomposing the aten level's ExportedProgram (what runs when
both levels are on; with free sizes, the scaled program the aten level's forked process exported is
decomposed there, not exported again) vs `ep.run_decompositions()` on the same program; `alone` = the level exporting on
its own vs `torch.export.export(...)` + `run_decompositions()`. Each with the example's static sizes and
with free B and T (fxlens then also exports and decomposes scaled inputs in a forked process, on the other core); the
`symbolic` row is raw torch's way to the same names: an export with B and T dynamic, then decomposed.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "server")]
import torch  # noqa: E402
from fxlens.report import Build  # noqa: E402
from fxlens.worker.construction.build import Example  # noqa: E402
from fxlens.worker.failures.classify import whole_line  # noqa: E402
from fxlens.worker.levels import core_aten as trace_core_aten  # noqa: E402
from fxlens.worker.levels.table import TABLE, ClassContext  # noqa: E402
from raw_torch import load  # noqa: E402
from specs import MODELS  # noqa: E402
from timing import median_seconds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-12")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    spec = MODELS[args.model]
    path = str(BENCH / "models" / (spec.file_name or spec.source.name))
    text = spec.text()
    module = load(path, text)
    lines = text.splitlines()
    with torch.device("meta"):
        instance = eval(spec.build, vars(module))
        inputs = eval(spec.inputs, {**vars(module), "torch": torch})
    span = whole_line(1, lines)
    free = [{0: "B", 1: "T"} if i.dim() >= 2 else {0: "B"} for i in inputs]
    ep = torch.export.export(instance, inputs, strict=False)
    ep.run_decompositions()  # warm both paths' caches alike

    def level(dims, exported, forked=None):
        result = trace_core_aten.run(
            Example(instance, Build(), inputs=inputs, dims=dims),
            path,
            lines,
            span,
            trace_core_aten.FromAten(exported, forked=forked),
        )
        assert result.ok, result.diagnostics

    def after_aten(dims) -> float:
        """The level as it runs after the aten level of the same trace: on its program and, with free
        sizes, on the scaled program its forked process still holds (the aten level itself untimed)."""
        context = ClassContext(("aten", "core-aten"))
        TABLE["aten"](Example(instance, Build(), inputs=inputs, dims=dims), path, lines, span, context)
        started = time.perf_counter()
        level(dims, context.exported, context.forked)
        return time.perf_counter() - started

    rows = {}
    raw_reuse = median_seconds(ep.run_decompositions, args.runs)
    raw_alone = median_seconds(
        lambda: torch.export.export(instance, inputs, strict=False).run_decompositions(), args.runs
    )
    for sizes, dims in (("static", None), ("free B, T", free)):
        rows[f"reuse, {sizes}"] = (statistics.median(after_aten(dims) for _ in range(args.runs)), raw_reuse)
        rows[f"alone, {sizes}"] = (median_seconds(functools.partial(level, dims, None), args.runs), raw_alone)
    dynamic = tuple({d: torch.export.Dim.AUTO for d in dims} for dims in free)
    raw_symbolic = median_seconds(
        lambda: torch.export.export(instance, inputs, dynamic_shapes=dynamic, strict=False).run_decompositions(),
        args.runs,
    )
    rows["alone, free B, T vs symbolic"] = (rows["alone, free B, T"][0], raw_symbolic)
    print(
        json.dumps(
            {
                "model": args.model,
                "runs": args.runs,
                "nodes": len(ep.run_decompositions().graph.nodes),
                "rows": {
                    k: {"fxlens_s": round(f, 3), "raw_s": round(r, 3), "ratio": round(f / r, 2)}
                    for k, (f, r) in rows.items()
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

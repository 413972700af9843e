"""What the overload table and the per-node FLOPs add to the ATen levels, in one process, medians.

    python bench/overloads.py [MODEL_KEY] [--runs N]     # default gpt2-12, 7 runs

`flops` is worker/overloads.add_flops over the level's graph, `schemas` the schema table, each against
the level's own time (the export, and run_decompositions for core-aten). `check` compares the summed
node FLOPs with FlopCounterMode run directly on the module (meta tensors, as fxlens runs).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "server")]
import torch  # noqa: E402
from fxlens.report import Node  # noqa: E402
from fxlens.worker.levels import overloads  # noqa: E402
from raw_torch import load  # noqa: E402
from specs import MODELS  # noqa: E402
from timing import median_seconds  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-12")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    spec = MODELS[args.model]
    module = load(str(BENCH / "models" / (spec.file_name or spec.source.name)), spec.text())
    with torch.device("meta"):
        instance = eval(spec.build, vars(module))
        inputs = eval(spec.inputs, {**vars(module), "torch": torch})
    counter = FlopCounterMode(display=False)
    with counter:
        instance(*inputs)
    started = time.perf_counter()
    ep = torch.export.export(instance, inputs, strict=False)
    export_s = time.perf_counter() - started
    started = time.perf_counter()
    core = ep.run_decompositions()
    core_s = export_s + time.perf_counter() - started
    out = {"model": args.model, "runs": args.runs, "flop_counter_total": counter.get_total_flops()}
    for level, program, level_s in (("aten", ep, export_s), ("core-aten", core, core_s)):
        nodes = [Node(n.name, n.op, str(n.target), len(n.users)) for n in program.graph.nodes]
        flops_s = median_seconds(functools.partial(overloads.add_flops, program.graph, nodes), args.runs)
        schemas_s = median_seconds(functools.partial(overloads.schemas, program.graph), args.runs)
        out[level] = {
            "nodes": len(nodes),
            "targets": len(overloads.schemas(program.graph)),
            "level_s": round(level_s, 3),
            "flops_ms": round(flops_s * 1e3, 1),
            "schemas_ms": round(schemas_s * 1e3, 2),
            "check": sum(n.flops or 0 for n in nodes),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

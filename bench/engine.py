"""Engine benchmark: a full report (fx + aten, with shapes) against raw torch doing the same work.

    python bench/engine.py [--runs 5] [--model bench/models/gpt2_small.py --class GPT]

Both sides run in this one invocation, alternating, on the same machine state; medians and their
ratio are printed as a Markdown table and written to bench/results/engine.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from fxlens.engine.worker_client import TraceOptions, WorkerClient  # noqa: E402

RAW_TORCH = r"""
import importlib.util, sys, time, json
import torch, torch.fx
from torch.fx.passes.shape_prop import ShapeProp
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, StatelessSymbolicContext
path, class_name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.spec_from_file_location("bench_model", path)
module = importlib.util.module_from_spec(spec); sys.modules["bench_model"] = module; spec.loader.exec_module(module)
def once():
    with torch.device("meta"):
        model = getattr(module, class_name)(module.GPTConfig())
        idx = torch.zeros(2, 8, dtype=torch.long)
    gm = torch.fx.symbolic_trace(model)
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    fake = mode.from_tensor(idx, symbolic_context=StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * 2))
    ShapeProp(gm, fake_mode=mode).propagate(fake)
    auto = torch.export.Dim.AUTO
    torch.export.export(model, (idx,), dynamic_shapes=({0: auto, 1: auto},), strict=False)
once()  # warm, as the fxlens worker is
times = []
for _ in range(runs):
    start = time.perf_counter(); once(); times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


async def fxlens_times(path: Path, class_name: str, runs: int) -> tuple[list[float], int]:
    client = WorkerClient()
    await client.start()
    text = path.read_text()
    options = TraceOptions(levels=("fx", "aten"), timeout=600)
    try:
        report = await client.analyse(str(path), text, options, classes=[class_name])  # warm
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            report = await client.analyse(str(path), text, options, classes=[class_name])
            times.append(time.perf_counter() - start)
    finally:
        await client.stop()
    cls = report.find_class(class_name)
    assert cls and all(r.ok for r in cls.levels.values()), "the benchmark model must trace at both levels"
    return times, sum(len(r.nodes) for r in cls.levels.values())


def raw_torch_times(path: Path, class_name: str, runs: int) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", RAW_TORCH, str(path), class_name, str(runs)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def cli_wall(path: Path, class_name: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fxlens", "graph", str(path), "--class", class_name],
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "server")},
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(ROOT / "bench" / "models" / "gpt2_small.py"))
    parser.add_argument("--class", dest="cls", default="GPT")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    path = Path(args.model).resolve()
    ours, nodes = asyncio.run(fxlens_times(path, args.cls, args.runs))
    raw = raw_torch_times(path, args.cls, args.runs)
    cli = [cli_wall(path, args.cls) for _ in range(3)]
    ours_median, raw_median = statistics.median(ours), statistics.median(raw)
    result = {
        "model": path.name,
        "class": args.cls,
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "nodes_fx_plus_aten": nodes,
        "fxlens_report_s": ours,
        "raw_torch_s": raw,
        "cli_wall_s": cli,
        "median_fxlens_s": ours_median,
        "median_raw_torch_s": raw_median,
        "ratio": ours_median / raw_median,
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "engine.json").write_text(json.dumps(result, indent=1))
    print(f"| {path.name} {args.cls} ({nodes} nodes, fx+aten) | median of {args.runs} | {os.cpu_count()} cores |")
    print("|---|---|---|")
    print(f"| fxlens full report (warm worker, forked child) | {ours_median:.2f} s | |")
    print(f"| raw torch: symbolic_trace + symbolic ShapeProp + export (warm) | {raw_median:.2f} s | |")
    print(f"| ratio fxlens / raw torch | {ours_median / raw_median:.2f}× | |")
    print(f"| `fxlens graph` wall time, cold (incl. starting torch) | {statistics.median(cli):.2f} s | |")


if __name__ == "__main__":
    main()

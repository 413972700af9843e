"""The inductor level's cost against raw `torch.compile(m)(x)` on the same module, cold and warm, medians,
in turns in one invocation (issue 23: at most 1.2x both).

    python bench/inductor.py [--models small,block] [--runs 3]

Every measurement is a fresh interpreter that imports torch (untimed: fxlens's warm worker has it) and
then times one compile of the class: raw torch, `torch.compile(m)(x)` of the CPU-built module (inductor's
default backend: kernels built by g++ and run); fxlens, the inductor level as a trace child runs it
(worker/levels/inductor.py: the meta-built module on fake tensors, kernels generated, not built). Both
import torch._inductor inside the timed part, as both do on their first compile.
- cold: an empty inductor cache folder each time (TORCHINDUCTOR_CACHE_DIR for raw torch, fxlens's private
  folder for fxlens): inductor's CPU probes are compiled too, and raw torch builds every kernel;
- warm: the folder one earlier run of the same kind filled: raw torch's FX graph cache and kernels hit;
  fxlens's probes are remembered (the FX graph cache would skip the compile, and with it the provenance).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# key -> (file, how the module is built, its inputs)
MODELS = {
    "small": (ROOT / "examples" / "residual_mlp.py", "ResidualMLP(width=16, depth=2)", "(torch.randn(4, 8),)"),
    "block": (ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py", "Block(GPTConfig())", "(torch.randn(2, 8, 32),)"),
}


def one(kind: str, key: str) -> float:
    """In the fresh interpreter: build, then time one compile; seconds."""
    sys.path[:0] = [str(BENCH), str(ROOT / "server")]
    import torch
    from raw_torch import load

    path, build, inputs = MODELS[key]
    module = load(str(path), path.read_text())
    if kind == "raw":
        instance, args = eval(build, vars(module)), eval(inputs, {**vars(module), "torch": torch})
        started = time.perf_counter()
        torch.compile(instance)(*args)
        return time.perf_counter() - started
    from fxlens import lines as line_model
    from fxlens.report import Build
    from fxlens.worker.construction.build import Example
    from fxlens.worker.failures.classify import whole_line
    from fxlens.worker.levels import inductor

    with torch.device("meta"):
        instance, args = eval(build, vars(module)), eval(inputs, {**vars(module), "torch": torch})
    lines = line_model.split(path.read_text())
    started = time.perf_counter()
    result = inductor.run(Example(instance, Build(), inputs=args), str(path), lines, whole_line(1, lines))
    seconds = time.perf_counter() - started
    assert result.ok and result.nodes, result.diagnostics
    return seconds


def _timed(kind: str, key: str, folder: str) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "server"),
        "TORCHINDUCTOR_CACHE_DIR" if kind == "raw" else "FXLENS_INDUCTOR_CACHE_DIR": folder,
    }
    done = subprocess.run(
        [sys.executable, __file__, "--one", kind, key], capture_output=True, text=True, env=env, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} {key} failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def measure(keys: list[str], runs: int) -> dict:
    rows = {}
    with tempfile.TemporaryDirectory(prefix="fxlens-bench-inductor-") as temp:
        for key in keys:
            times: dict[str, dict[str, list[float]]] = {k: {"cold": [], "warm": []} for k in ("fxlens", "raw")}
            warm = {kind: os.path.join(temp, f"{key}-{kind}-warm") for kind in times}
            for kind in times:  # the warm folders: filled once
                _timed("raw" if kind == "raw" else "fxlens", key, warm[kind])
            for index in range(runs):
                for kind in times:  # in turns, on the same machine state
                    cold = os.path.join(temp, f"{key}-{kind}-cold-{index}")
                    times[kind]["cold"].append(_timed(kind, key, cold))
                    shutil.rmtree(cold, ignore_errors=True)
                    times[kind]["warm"].append(_timed(kind, key, warm[kind]))
            row = {}
            for state in ("cold", "warm"):
                fxlens, raw = statistics.median(times["fxlens"][state]), statistics.median(times["raw"][state])
                row[state] = {
                    "fxlens_s": round(fxlens, 2),
                    "raw_s": round(raw, 2),
                    "ratio": round(fxlens / raw, 2),
                    "fxlens_runs": [round(t, 2) for t in times["fxlens"][state]],
                    "raw_runs": [round(t, 2) for t in times["raw"][state]],
                }
            rows[key] = row
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(one(sys.argv[2], sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="small,block")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    load = os.getloadavg()[0]
    rows = measure(keys, args.runs)
    print(
        json.dumps(
            {
                "runs": args.runs,
                "cores": os.cpu_count(),
                "load_before": round(load, 2),
                "load_after": round(os.getloadavg()[0], 2),
                "rows": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

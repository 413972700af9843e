"""`fxlens check` over the real-model tree of tests/fixtures/repos (process start → exit): cold (an empty
cache, `-j` = the cores), warm (the same tree again: served from the cache) and cold on one worker
(`-j 1`), in turns with `python -c "import torch"` and raw torch tracing the same classes, one cold process
each (bench/reach_torch.py): fx + export of every reference construction (the corpus's small, hand-picked
configurations), and fx + export of what fxlens built (the same instances and inputs: its directives,
constructor calls and parents' instances, from one untimed `fxlens graph --json` per file first). The
second is the like-for-like baseline: fxlens builds what the package builds (`ModelArgs()`'s defaults, not a
`debug` preset), several times the nodes of the reference for the language models. Medians of `runs`.

Both sides get the same environment: every repository's import roots on the path (as `pip install -e` of
each would), so a file's sibling and package imports resolve for fxlens as they do for raw torch."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reach import CORPUS, fxlens_env, fxlens_graph, rebuild_jobs

BENCH = Path(__file__).resolve().parent
REPOS = BENCH.parent / "tests" / "fixtures" / "repos"


def _wall(command: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - start, done


def _tree_env() -> dict:
    env = fxlens_env(False)
    roots = dict.fromkeys(str((m.root / folder).resolve()) for m in CORPUS for folder in m.sys_path)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *roots])
    return env


def _fxlens_check(files: list[str], cache: str, *options: str) -> tuple[float, dict]:
    seconds, done = _wall(
        [sys.executable, "-m", "fxlens", "check", *files, "--format", "json", "--cache-dir", cache, *options],
        cwd=REPOS,
        env=_tree_env(),
    )
    data = json.loads(done.stdout)
    found = data["diagnostics"]
    return seconds, {
        "exit": done.returncode,
        "diagnostics": len(found),
        "errors": sum(d["severity"] == "error" for d in found),
        "load_errors": sum(d["category"] == "load" for d in found),
        "summary": data["summary"],
    }


def _raw_torch(request: dict) -> tuple[float, dict]:
    seconds, done = _wall([sys.executable, str(BENCH / "reach_torch.py")], input=json.dumps(request))
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return seconds, json.loads(done.stdout)


def _what_fxlens_built() -> dict:
    """The request that has raw torch rebuild every class as fxlens built it (untimed)."""
    runs = {model.key: fxlens_graph(model) for model in CORPUS}
    return {"mode": "time-rebuilds", "files": [m.key for m in CORPUS], "jobs": rebuild_jobs(list(CORPUS), runs)}


def tree_check(runs: int) -> dict:
    files = [str(m.file.relative_to(REPOS)) for m in CORPUS]
    fxlens, warm, serial, import_torch, raw, rebuilt = [], [], [], [], [], []
    check = warm_check = traced = same = None
    same_work = _what_fxlens_built()
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="fxlens-check-cache-") as cache:
            seconds, check = _fxlens_check(files, cache)
            fxlens.append(seconds)
            seconds, warm_check = _fxlens_check(files, cache)
            warm.append(seconds)
        with tempfile.TemporaryDirectory(prefix="fxlens-check-cache-") as cache:
            serial.append(_fxlens_check(files, cache, "-j", "1")[0])
        import_torch.append(_wall([sys.executable, "-c", "import torch"])[0])
        seconds, traced = _raw_torch({"mode": "time"})
        raw.append(seconds)
        seconds, same = _raw_torch(same_work)
        rebuilt.append(seconds)
    medians = {
        "fxlens_check": statistics.median(fxlens),
        "fxlens_check_warm": statistics.median(warm),
        "fxlens_check_one_job": statistics.median(serial),
        "import_torch": statistics.median(import_torch),
        "raw_torch": statistics.median(raw),
        "raw_torch_same_instances": statistics.median(rebuilt),
    }
    return {
        "runs": runs,
        "files": len(files),
        "classes": sum(len(m.classes) for m in CORPUS),
        "fxlens_check_s": fxlens,
        "fxlens_check_warm_s": warm,
        "fxlens_check_one_job_s": serial,
        "import_torch_s": import_torch,
        "raw_torch_s": raw,
        "warm_summary": warm_check["summary"],
        **{f"median_{k}_s": v for k, v in medians.items()},
        "raw_torch_same_instances_s": rebuilt,
        "ratio_to_raw_torch": medians["fxlens_check"] / medians["raw_torch"],
        "ratio_to_raw_torch_same_instances": medians["fxlens_check"] / medians["raw_torch_same_instances"],
        "ratio_to_import_torch": medians["fxlens_check"] / medians["import_torch"],
        "check": check,
        "raw_traced_levels": traced["traced_levels"],
        "raw_inside_process_s": traced["seconds"],
        "rebuilt_levels": same["traced_levels"],
        "rebuilt_failed_levels": same["failed_levels"],
        "rebuilt_inside_process_s": same["seconds"],
    }

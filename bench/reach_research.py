"""Reach on research-style code (issue 41): the Module classes of tests/fixtures/research, eight small
repositories laid out as research code is published, through `fxlens graph --json` with no directive, against
raw torch on the hand-written constructions of bench/research_reference.py.

    python -m bench reach-research [--only REPO,...] [--baseline JSON] [--no-write] [--python PATH]

Per model file, one at a time (the two sides in turns, on the same machine state):
1. fxlens: `fxlens graph FILE --json` from the repository's root (PYTHONPATH=server of this checkout), its wall
   time and the peak RSS of its process tree (the CLI, the worker, the trace children: `wait4`'s maximum).
2. raw torch: one process (bench/reach_research_torch.py, mode `truth`) importing the file as the repository's
   scripts do, building every reference construction on the CPU and running symbolic_trace and torch.export on
   it: which classes raw torch handles, its wall time and peak RSS.
3. agreement: for every class and level fxlens showed, the same module rebuilt in raw torch from what the report
   says it built (bench/reach_rebuild.py), node by node (op, target, users, line; shape and dtype).

fx reach = classes fxlens shows an fx graph for / classes raw torch fx-traces; aten reach the same with
torch.export. Which mechanism built each class is read from the report's labels (`inputs.built`, where the
inputs came from). With --baseline (an earlier run's bench/results/reach-research.json), the classes reached
since then are counted per mechanism. Writes bench/results/reach-research.json and the section of
bench/RESULTS.md (unless --no-write or --only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from reach_common import agreement, by_class, failure_category, fxlens_env, graph_result, recipe, shown  # noqa: E402
from research_reference import CORPUS, ModelFile  # noqa: E402

HANG_GUARD_SECONDS = 900
RESULTS_JSON = BENCH / "results" / "reach-research.json"


def timed(command: list[str], cwd: Path, env: dict, stdin: str = "", timeout: float = HANG_GUARD_SECONDS) -> dict:
    """Run `command`; its exit, output, wall seconds and the peak RSS (MB) of it and every descendant it waited
    for (Linux's wait4 reports the maximum over the whole reaped tree)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, tempfile.TemporaryFile("w+") as inp:
        inp.write(stdin)
        inp.seek(0)
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=inp, stdout=out, stderr=err, text=True)
        killer = threading.Timer(timeout, process.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            killer.cancel()
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "exit": process.returncode,
            "stdout": out.read(),
            "stderr": err.read(),
            "seconds": seconds,
            "peak_mb": usage.ru_maxrss / 1024,
        }


def fxlens_run(model: ModelFile, python: str) -> dict:
    done = timed([python, "-m", "fxlens", "graph", str(model.file.resolve()), "--json"], model.root, fxlens_env(False))
    return {
        **graph_result(done["exit"], done["stdout"], done["stderr"]),
        "seconds": done["seconds"],
        "peak_mb": done["peak_mb"],
    }


def raw_torch(request: dict, python: str) -> dict:
    done = timed([python, str(BENCH / "reach_research_torch.py")], BENCH.parent, dict(os.environ), json.dumps(request))
    if done["exit"] != 0:
        return {
            "error": f"exit {done['exit']}: {done['stderr'][-1500:]}",
            "seconds": done["seconds"],
            "peak_mb": done["peak_mb"],
        }
    return {**json.loads(done["stdout"]), "seconds": done["seconds"], "peak_mb": done["peak_mb"]}


def rebuild_jobs(run: dict) -> list[dict]:
    classes = by_class(run)
    jobs = []
    for name, levels in classes.items():
        wanted = [level for level, obj in levels.items() if shown(obj)]
        how = recipe(name, levels, classes) if wanted else None
        if how:
            jobs.append({"file": "", "class": name, "levels": wanted, "recipe": how})
    return jobs


def mechanism(levels: dict) -> str:
    """Which of fxlens's ways built the class and found its inputs, from the report's own labels: how it was
    built (`directive`, `call-in-file`, `config`, `found`, `guessed`, `parent`, ...) and where the inputs came
    from (each input's `source`, with the layer or name it cites left out)."""
    if not levels:
        return "(no report)"
    inputs = next(iter(levels.values()))["inputs"]
    sources = sorted({_source_kind(a.get("source", "")) for a in inputs["args"] if a.get("source")})
    kind = f"built: {inputs['built']}; inputs: {inputs['source']}"
    return kind + (f" ({', '.join(sources)})" if sources else "")


def _source_kind(text: str) -> str:
    return re.sub(r"`[^`]*`|\b[A-Z]\w*\b|\d+", "…", text).strip()


def internal_lines(run: dict) -> list[str]:
    found = [
        f"{o['class']} ({o['level']}): {d['message'][:200]}"
        for o in run["objects"]
        for d in o["diagnostics"]
        if d["category"] == "internal"
    ]
    return found + [line.strip()[:200] for line in run["stderr"].splitlines() if "[internal]" in line]


def _agreement_of(levels: dict, theirs: dict | None) -> dict:
    out = {}
    for level in ("fx", "aten"):
        if not shown(levels.get(level)):
            continue
        rows = (theirs or {}).get(level)
        if rows is None:
            out[level] = {"verdict": "not comparable", "why": "the report does not say how to rebuild it"}
        elif "error" in rows:
            out[level] = {"verdict": "not comparable", "why": rows["error"]}
        else:
            agree, why, shaped = agreement(levels[level], rows)
            out[level] = {
                "verdict": "agree" if agree else "DISAGREE",
                "why": why,
                "nodes": len(rows["rows"]),
                "shapes_compared": shaped,
            }
    return out


def measure_file(model: ModelFile, python: str, log) -> dict:
    log(f"fxlens graph {model.key} …")
    run = fxlens_run(model, python)
    log(f"raw torch {model.key} …")
    truth = raw_torch({"mode": "truth", "file": model.key}, python)
    jobs = rebuild_jobs(run)
    rebuilt = raw_torch({"mode": "rebuild", "file": model.key, "jobs": jobs}, python) if jobs else {"rebuilds": {}}
    classes = by_class(run)
    rows = []
    for name in list(model.classes) + [c for c in classes if c not in model.classes]:
        levels, says = classes.get(name, {}), truth.get("truth", {}).get(name, {})
        rows.append(
            {
                "file": model.key,
                "class": name,
                "listed": name in model.classes,
                "raw_fx": says.get("fx_ok"),
                "raw_export": says.get("export_ok"),
                "raw_error": says.get("reference_error")
                or " / ".join(filter(None, [says.get("fx_error"), says.get("export_error")])),
                "fx": shown(levels.get("fx")),
                "aten": shown(levels.get("aten")),
                "mechanism": mechanism(levels),
                "detail": next(iter(levels.values()))["inputs"]["detail"][:160] if levels else "",
                "fx_category": failure_category("fx", levels),
                "aten_category": failure_category("aten", levels),
                "agreement": _agreement_of(levels, rebuilt.get("rebuilds", {}).get(name)),
            }
        )
    return {
        "file": model.key,
        "rows": rows,
        "internal": internal_lines(run),
        "load": run["load"],
        "fxlens": {"seconds": run["seconds"], "peak_mb": run["peak_mb"], "exit": run["exit"]},
        "torch": {"seconds": truth["seconds"], "peak_mb": truth["peak_mb"], "error": truth.get("error", "")},
        "rebuild_error": rebuilt.get("error", ""),
    }


def _ratio(hit: int, of: int) -> dict:
    return {"hit": hit, "of": of, "ratio": hit / of if of else None}


def summary(files: list[dict]) -> dict:
    rows = [r for f in files for r in f["rows"] if r["listed"]]
    verdicts = [v for r in rows for v in r["agreement"].values()]
    by_mechanism: dict = defaultdict(lambda: {"fx": 0, "aten": 0, "classes": 0})
    for r in rows:
        entry = by_mechanism[r["mechanism"]]
        entry["classes"] += 1
        entry["fx"] += r["fx"] and bool(r["raw_fx"])
        entry["aten"] += r["aten"] and bool(r["raw_export"])
    return {
        "classes": len(rows),
        "fx_reach": _ratio(sum(r["fx"] for r in rows if r["raw_fx"]), sum(bool(r["raw_fx"]) for r in rows)),
        "aten_reach": _ratio(sum(r["aten"] for r in rows if r["raw_export"]), sum(bool(r["raw_export"]) for r in rows)),
        "agree": sum(v["verdict"] == "agree" for v in verdicts),
        "disagree": sum(v["verdict"] == "DISAGREE" for v in verdicts),
        "not_comparable": sum(v["verdict"] == "not comparable" for v in verdicts),
        "nodes_agreeing": sum(v.get("nodes", 0) for v in verdicts if v["verdict"] == "agree"),
        "internal": sum(len(f["internal"]) for f in files),
        "fxlens_seconds": sum(f["fxlens"]["seconds"] for f in files),
        "torch_seconds": sum(f["torch"]["seconds"] for f in files),
        "by_mechanism": dict(sorted(by_mechanism.items(), key=lambda item: -item[1]["classes"])),
    }


def wins(current: dict, baseline: dict) -> dict:
    """mechanism -> the classes it reaches now (fx or aten, where raw torch does) that the baseline did not."""
    before = {(r["file"], r["class"]): r for f in baseline["files"] for r in f["rows"]}
    out: dict = defaultdict(lambda: {"fx": [], "aten": []})
    for f in current["files"]:
        for r in f["rows"]:
            old = before.get((r["file"], r["class"]))
            for level, raw in (("fx", "raw_fx"), ("aten", "raw_export")):
                if r[level] and r[raw] and not (old and old[level]):
                    out[r["mechanism"]][level].append(r["class"])
    return dict(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated repositories (folders of tests/fixtures/research)")
    parser.add_argument("--baseline", default="", help="an earlier run's reach-research.json: the wins since then")
    parser.add_argument("--no-write", action="store_true", help="print, but leave RESULTS.md as it is")
    parser.add_argument("--python", default=sys.executable, help="interpreter for fxlens and raw torch")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from reach_research_report import markdown
    from results_file import RESULTS_FILE, with_section

    args = parse_args(argv)
    only = {r.strip() for r in args.only.split(",") if r.strip()}
    models = [m for m in CORPUS if not only or m.repo in only]
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    files = [measure_file(model, args.python, log) for model in models]
    result = {"files": files, "summary": summary(files)}
    baseline = json.loads(Path(args.baseline).read_text()) if args.baseline else None
    if baseline:
        result["wins"] = wins(result, baseline)
        result["baseline_summary"] = baseline["summary"]
    RESULTS_JSON.parent.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(result, indent=1) + "\n")
    section = markdown(result)
    if not only and not args.no_write:
        RESULTS_FILE.write_text(with_section(section, RESULTS_FILE.read_text()))
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())

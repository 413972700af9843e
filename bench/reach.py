"""Reach on real repositories (issue 11): how many Module classes of a realistic corpus fxlens shows a graph
for with no directive, against what raw torch can trace, and whether every node it shows is torch's.

    python bench/reach.py [--installed] [--python PATH] [--only REPO,...]

1. `fxlens graph FILE --json` for every file of tests/fixtures/repos (no directive anywhere), run as a user
   would: the CLI in a subprocess, from the repository's root (PYTHONPATH=server of this checkout, or the
   installed `fxlens` with --installed).
2. Raw torch on the hand-written constructions of tests/fixtures/repos/reference.py, one process per
   repository (bench/reach_torch.py): does symbolic_trace / torch.export (non-strict) take each class?
3. For every class and level fxlens traced: the same module rebuilt in raw torch from what the report says
   it built (`inputs.directive`, else the constructor call and inputs it lists, else the parent's instance),
   node by node (op, target, users, line; shape and dtype where both sides have one).

Prints the table and writes bench/results/reach-fixtures.md and bench/results/reach.json. (The reach section of
bench/RESULTS.md is bench/reach_packages.py's: reach on installed packages, not on these copies.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "repos"))
from reach_common import (  # noqa: E402,F401
    agreement,
    by_class,
    compare,
    failure_category,
    fxlens_command,
    fxlens_env,
    fxlens_json,
    recipe,
    shown,
)
from reference import CORPUS, ModelFile  # noqa: E402

HANG_GUARD_SECONDS = 900


def fxlens_graph(model: ModelFile, installed: bool = False, python: str = sys.executable) -> dict:
    """One `fxlens graph --json` of one file, from the repository root: its class objects and load problems."""
    return fxlens_json(model.file.resolve(), model.root, installed=installed, python=python, timeout=HANG_GUARD_SECONDS)


def raw_torch(files: list[str], jobs: list[dict], truth: bool = True, python: str = sys.executable) -> dict:
    request = json.dumps({"files": files, "jobs": jobs, "truth": truth})
    done = subprocess.run(
        [python, str(BENCH / "reach_torch.py")],
        input=request,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
    )
    if done.returncode != 0:
        raise RuntimeError(f"raw torch failed on {files}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def rebuild_jobs(models: list[ModelFile], runs: dict) -> list[dict]:
    """What raw torch rebuilds of each class fxlens traced (`runs`: file key -> fxlens_graph), per level shown."""
    jobs = []
    for model in models:
        classes = by_class(runs[model.key])
        for name, levels in classes.items():
            wanted = [level for level, obj in levels.items() if shown(obj)]
            how = recipe(name, levels, classes) if wanted else None
            if how:
                jobs.append({"file": model.key, "class": name, "levels": wanted, "recipe": how})
    return jobs


def measure(models: tuple = CORPUS, installed: bool = False, python: str = sys.executable, log=print) -> dict:
    runs = {}
    for model in models:
        log(f"fxlens graph {model.key} …")
        runs[model.key] = fxlens_graph(model, installed, python)
    repos: dict = defaultdict(list)
    for model in models:
        repos[model.repo].append(model)
    raw: dict = {"truth": {}, "rebuilds": [], "import_errors": {}}
    for repo, members in repos.items():
        jobs = rebuild_jobs(members, runs)
        log(f"raw torch {repo} ({len(jobs)} rebuilds) …")
        answer = raw_torch([m.key for m in members], jobs, python=python)
        for key in raw:
            raw[key].update(answer[key]) if isinstance(raw[key], dict) else raw[key].extend(answer[key])
    return rows_of(models, runs, raw)


def rows_of(models: tuple, runs: dict, raw: dict) -> dict:
    rebuilt = {(r["file"], r["class"]): r for r in raw["rebuilds"]}
    rows = []
    for model in models:
        classes = by_class(runs[model.key])
        truth = raw["truth"].get(model.key, {})
        for name in list(model.classes) + [c for c in classes if c not in model.classes]:
            levels, torch_says = classes.get(name, {}), truth.get(name, {})
            row = {
                "file": model.key,
                "class": name,
                "listed": name in model.classes,
                "raw_fx": torch_says.get("fx_ok"),
                "raw_export": torch_says.get("export_ok"),
                "raw_fx_error": torch_says.get("fx_error", ""),
                "raw_export_error": torch_says.get("export_error", ""),
                "fx": shown(levels.get("fx")),
                "aten": shown(levels.get("aten")),
                "built": next(iter(levels.values()))["inputs"]["built"] if levels else "",
                "fx_category": failure_category("fx", levels),
                "aten_category": failure_category("aten", levels),
                "agreement": {},
            }
            for level in ("fx", "aten"):
                if not row[level]:
                    continue
                theirs = rebuilt.get((model.key, name), {}).get(level)
                if theirs is None:
                    row["agreement"][level] = {
                        "verdict": "not comparable",
                        "why": "the report does not say how to rebuild it",
                    }
                elif "error" in theirs:
                    row["agreement"][level] = {"verdict": "not comparable", "why": theirs["error"]}
                else:
                    agree, why, shaped = agreement(levels[level], theirs)
                    row["agreement"][level] = {
                        "verdict": "agree" if agree else "DISAGREE",
                        "why": why,
                        "nodes": len(theirs["rows"]),
                        "shapes_compared": shaped,
                    }
            rows.append(row)
    return {
        "rows": rows,
        "summary": summary(rows),
        "load_failures": {
            key: run["load"] or [run["stderr"]]
            for key, run in runs.items()
            if run["load"] or (run["exit"] == 2 and not run["objects"])
        },
        "reference_errors": raw["import_errors"],
    }


def _ratio(hit: int, of: int) -> dict:
    return {"hit": hit, "of": of, "ratio": hit / of if of else None}


def summary(rows: list[dict]) -> dict:
    listed = [r for r in rows if r["listed"]]
    verdicts = [a for r in rows for a in r["agreement"].values()]
    categories: dict = defaultdict(int)
    for r in rows:
        for level in ("fx", "aten"):
            if r[f"{level}_category"]:
                categories[r[f"{level}_category"]] += 1
    return {
        "classes": len(listed),
        "fx_reach": _ratio(sum(r["fx"] for r in listed if r["raw_fx"]), sum(bool(r["raw_fx"]) for r in listed)),
        "aten_reach": _ratio(
            sum(r["aten"] for r in listed if r["raw_export"]), sum(bool(r["raw_export"]) for r in listed)
        ),
        "fx_shown": sum(r["fx"] for r in listed),
        "aten_shown": sum(r["aten"] for r in listed),
        "agree": sum(v["verdict"] == "agree" for v in verdicts),
        "disagree": sum(v["verdict"] == "DISAGREE" for v in verdicts),
        "not_comparable": sum(v["verdict"] == "not comparable" for v in verdicts),
        "nodes_agreeing": sum(v.get("nodes", 0) for v in verdicts if v["verdict"] == "agree"),
        "failure_categories": dict(sorted(categories.items())),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--installed", action="store_true", help="run the `fxlens` on PATH, not this checkout's")
    parser.add_argument("--python", default=sys.executable, help="interpreter for fxlens and raw torch")
    parser.add_argument("--only", default="", help="comma-separated repositories (folders of tests/fixtures/repos)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from reach_report import markdown

    args = parse_args(argv)
    only = {r.strip() for r in args.only.split(",") if r.strip()}
    models = tuple(m for m in CORPUS if not only or m.repo in only)
    result = measure(models, args.installed, args.python, log=lambda text: print(text, file=sys.stderr, flush=True))
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / "reach.json").write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    if not only:
        (BENCH / "results" / "reach-fixtures.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

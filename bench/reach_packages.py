"""Reach on installed packages (issue 22): the nn.Module classes of real model files, traced where pip put them.

    python bench/reach_packages.py [--only PKG,...] [--fresh] [--timeout S] [--python PATH]

1. Raw torch, one process per package (bench/reach_packages_torch.py): the model files' classes, and for every
   class an instance of which the package's own constructors build (bench/reach_corpus.py: tiny configs,
   factories), whether `symbolic_trace(instance)` and `torch.export.export(instance, recorded inputs)` succeed.
2. fxlens, as a user would run it, with no directive: `fxlens graph FILE --json --level fx --level aten` on each
   model file that holds such a class, from an empty folder (only the installed packages are importable).
3. Node agreement: every level fxlens traced, rebuilt in raw torch from what its report says it built.

Everything is cached under bench/results/reach_packages/ (keyed by file contents, package versions, fxlens's and
the bench's sources): an interrupted run resumes where it stopped; --fresh forgets. Writes the reach section of
bench/RESULTS.md and bench/results/reach_packages.json.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from reach_common import agreement, by_class, fxlens_json, recipe, shown  # noqa: E402
from reach_corpus import PACKAGES  # noqa: E402

CACHE = BENCH / "results" / "reach_packages"
HANG_GUARD_SECONDS = 1800


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def sources(*folders: Path) -> str:
    return digest(*[p.read_bytes() for folder in folders for p in sorted(folder.rglob("*.py"))])


BENCH_SOURCES = digest(
    *[
        (BENCH / f).read_bytes()
        for f in (
            "reach_packages_torch.py",
            "reach_rebuild.py",
            "torch_nodes.py",
            "reach_corpus.py",
            "reach_corpus_hf.py",
            "reach_corpus_entry.py",
        )
    ]
)


def peek(name: str, key: str) -> bool:
    path = CACHE / f"{name}.json"
    return path.exists() and json.loads(path.read_text()).get("key") == key


def cached(name: str, key: str, compute, fresh: bool):
    path = CACHE / f"{name}.json"
    if not fresh and path.exists():
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            return stored["value"]
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "value": value}) + "\n")
    return value


def torch_side(request: dict, python: str) -> dict:
    done = subprocess.run(
        [python, str(BENCH / "reach_packages_torch.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_SECONDS,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"raw torch failed on {request['package']} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def fxlens_run(file: str, timeout: float, python: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="fxlens-reach-") as empty:
        start = time.perf_counter()
        try:
            run = fxlens_json(
                Path(file),
                Path(empty),
                ("--level", "fx", "--level", "aten", "--timeout", str(timeout)),
                python=python,
                timeout=timeout * 3 + 120,
            )
        except subprocess.TimeoutExpired:
            run = {"exit": None, "objects": [], "load": [], "stderr": "the fxlens CLI did not finish"}
        run["seconds"] = round(time.perf_counter() - start, 1)
    return run


def error_of(level: str, levels: dict) -> tuple[str, str]:
    """(category, message) of why the level shows no graph: its first error, else its first warning, else
    the class's first error at another level (a class never built)."""
    obj = levels.get(level)
    if obj is None:
        return "(level missing)", ""
    if (
        not obj["ok"]
        and "input" in obj.get("note", "")
        and not any(d["severity"] in ("error", "warning") for d in obj["diagnostics"])
    ):
        return "no inputs", obj["note"]  # its own reason, not the fx level's error
    for candidate, severities in (
        (obj, ("error",)),
        (obj, ("warning",)),
        *((other, ("error",)) for other in levels.values()),
    ):
        found = [d for d in candidate["diagnostics"] if d["severity"] in severities]
        if found:
            return found[0]["category"], f"{found[0]['line']}: {found[0]['message']}"
    return ("(empty graph)" if obj["ok"] else "(no diagnostic)"), obj.get("note", "")


def measure_package(package, args, log) -> dict:
    pyver = subprocess.run(
        [args.python, "-c", "import torch, sys; print(torch.__version__, sys.version)"], capture_output=True, text=True
    ).stdout
    version = subprocess.run(
        [args.python, "-c", f"import importlib.metadata as m; print(m.version('{package.name}'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    log(f"[{package.name} {version}] raw torch …")
    truth = cached(
        f"truth-{package.name}",
        digest(version, pyver, BENCH_SOURCES),
        lambda: torch_side({"package": package.name, "mode": "truth"}, args.python),
        args.fresh,
    )
    files = sorted({c["file"] for c in truth["classes"].values()})
    fxlens_sources = sources(ROOT / "server" / "fxlens")
    runs = {}
    for i, file in enumerate(files, 1):
        log(f"[{package.name}] fxlens {i}/{len(files)} {file.split('site-packages/')[-1]} …")
        key = digest(Path(file).read_bytes(), fxlens_sources, args.timeout, pyver)
        if args.cached_only and not peek(f"fxlens/{package.name}/{digest(file)}", key):
            continue  # not measured in this run: its classes are counted as such
        runs[file] = cached(
            f"fxlens/{package.name}/{digest(file)}",
            key,
            functools.partial(fxlens_run, file, args.timeout, args.python),
            args.fresh,
        )
    jobs = []
    for file, run in runs.items():
        classes = by_class(run)
        for name, levels in classes.items():
            wanted = [level for level, obj in levels.items() if shown(obj)]
            how = recipe(name, levels, classes) if wanted else None
            if how:
                jobs.append(
                    {
                        "file": file,
                        "module": truth["files"][file]["module"],
                        "class": name,
                        "levels": wanted,
                        "recipe": how,
                    }
                )
    log(f"[{package.name}] raw torch rebuilds ({len(jobs)}) …")
    rebuilt = []
    for file in sorted({job["file"] for job in jobs}):  # one process per file: a crash costs one file
        mine = [job for job in jobs if job["file"] == file]
        rebuilt += cached(
            f"rebuild/{package.name}/{digest(file)}",
            digest(mine, version, pyver, BENCH_SOURCES),
            functools.partial(rebuild_file, package, mine, args.python),
            args.fresh,
        )
    return {"version": version, "truth": truth, "runs": runs, "rebuilt": rebuilt}


def rebuild_file(package, jobs: list[dict], python: str) -> list[dict]:
    try:
        return torch_side({"package": package.name, "mode": "rebuild", "jobs": jobs}, python)["rebuilds"]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        why = f"the raw-torch process failed: {str(error).splitlines()[0]} {str(error)[-200:]}"
        return [
            {"file": job["file"], "class": job["class"], **{lv: {"error": why} for lv in job["levels"]}} for job in jobs
        ]


def rows_of(name: str, measured: dict) -> list[dict]:
    truth, runs = measured["truth"], measured["runs"]
    rebuilt = {(r["file"], r["class"]): r for r in measured["rebuilt"]}
    rows = []
    for entry in truth["classes"].values():
        file, cls = entry["file"], entry["class"]
        if file not in runs:
            continue
        run = runs[file]
        levels = by_class(run).get(cls.split(".")[-1], {})
        row = {
            "package": name,
            "file": file.split("site-packages/")[-1],
            "class": cls,
            "builder": entry["builder"],
            "instance": entry["path"],
            "raw_fx": entry.get("fx_ok"),
            "raw_export": entry.get("export_ok"),
            "raw_fx_error": entry.get("fx_error", ""),
            "raw_export_error": entry.get("export_error", ""),
            "fx": shown(levels.get("fx")),
            "aten": shown(levels.get("aten")),
            "built": next(iter(levels.values()))["inputs"]["built"] if levels else "",
            "agreement": {},
        }
        for level in ("fx", "aten"):
            if row[level]:
                row[f"{level}_failure"] = ("", "")
            elif levels:
                row[f"{level}_failure"] = error_of(level, levels)
            else:
                why = " · ".join(run["load"]) or run["stderr"][-300:] or f"exit {run['exit']}"
                row[f"{level}_failure"] = ("load" if run["load"] else "(class not in fxlens's output)", why)
            if not row[level]:
                continue
            theirs = rebuilt.get((file, cls.split(".")[-1]), {}).get(level)
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
    return rows


def _ratio(hit: int, of: int) -> dict:
    return {"hit": hit, "of": of, "ratio": hit / of if of else None}


def summary(rows: list[dict], files: dict | None = None, unmeasured: int = 0) -> dict:
    verdicts = [a for r in rows for a in r["agreement"].values()]
    return {
        "enumerated": sum(len(e["classes"]) for e in (files or {}).values()),
        "model_files": len(files or {}),
        "unimportable_files": sum(bool(e["import_error"]) for e in (files or {}).values()),
        "built": len(rows),
        "unmeasured": unmeasured,
        "fx_reach": _ratio(sum(r["fx"] for r in rows if r["raw_fx"]), sum(bool(r["raw_fx"]) for r in rows)),
        "aten_reach": _ratio(sum(r["aten"] for r in rows if r["raw_export"]), sum(bool(r["raw_export"]) for r in rows)),
        "agree": sum(v["verdict"] == "agree" for v in verdicts),
        "disagree": sum(v["verdict"] == "DISAGREE" for v in verdicts),
        "not_comparable": sum(v["verdict"] == "not comparable" for v in verdicts),
        "nodes_agreeing": sum(v.get("nodes", 0) for v in verdicts if v["verdict"] == "agree"),
    }


def gaps(rows: list[dict]) -> dict:
    """level -> category -> the classes torch traces at that level and fxlens does not, with fxlens's message."""
    out: dict = {"fx": defaultdict(list), "aten": defaultdict(list)}
    for r in rows:
        for level, raw in (("fx", "raw_fx"), ("aten", "raw_export")):
            if r[raw] and not r[level]:
                category, message = r[f"{level}_failure"]
                out[level][category].append({"file": r["file"], "class": r["class"], "message": message[:300]})
    return {level: dict(sorted(found.items(), key=lambda kv: -len(kv[1]))) for level, found in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated packages (pip names) of bench/reach_corpus.py")
    parser.add_argument("--fresh", action="store_true", help="ignore the cache")
    parser.add_argument("--timeout", type=float, default=300.0, help="fxlens's --timeout per file (default 300)")
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="report from the cache: files fxlens has not run on yet are left out (counted)",
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter for fxlens and raw torch")
    args = parser.parse_args(argv)
    log = lambda text: print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    result: dict = {"packages": {}, "rows": []}
    order = [p.strip() for p in args.only.split(",") if p.strip()] or [p.name for p in PACKAGES]
    for package in sorted((p for p in PACKAGES if p.name in order), key=lambda p: order.index(p.name)):
        measured = measure_package(package, args, log)
        rows = rows_of(package.name, measured)
        result["rows"] += rows
        result["packages"][package.name] = {
            "version": measured["version"],
            "summary": summary(rows, measured["truth"]["files"], len(measured["truth"]["classes"]) - len(rows)),
            "builders": measured["truth"]["builders"],
            "unimportable": {
                f.split("site-packages/")[-1]: e["import_error"]
                for f, e in measured["truth"]["files"].items()
                if e["import_error"]
            },
            "fxlens_seconds": sum(r.get("seconds", 0) for r in measured["runs"].values()),
        }
    files = {
        f"{p}:{i}": {"classes": [None] * s["summary"]["enumerated"], "import_error": ""}
        for i, (p, s) in enumerate(result["packages"].items())
    }
    result["summary"] = summary(
        result["rows"], files, sum(s["summary"]["unmeasured"] for s in result["packages"].values())
    )
    result["summary"]["model_files"] = sum(s["summary"]["model_files"] for s in result["packages"].values())
    result["summary"]["unimportable_files"] = sum(
        s["summary"]["unimportable_files"] for s in result["packages"].values()
    )
    result["gaps"] = gaps(result["rows"])
    result["seconds"] = round(time.perf_counter() - start)
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / "reach_packages.json").write_text(json.dumps(result, indent=1) + "\n")
    from reach_packages_report import markdown
    from results_file import RESULTS_FILE, with_section

    table = markdown(result, argv if argv is not None else sys.argv[1:])
    if not args.only:
        RESULTS_FILE.write_text(with_section(table, RESULTS_FILE.read_text()))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

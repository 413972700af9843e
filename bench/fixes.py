"""Fixes that prove themselves, measured on our own corpus (issue 42): how many break and failure sites get a
proven fix, how many proven fixes then fail an independent check, and what a proof costs.

    python -m bench fixes [--corpus DIR] [--no-write] [--save JSON] [--before JSON]

Each file of the corpus (default tests/fixtures/fixes: library-style code written here, every class a module
with default constructor arguments) is traced once through a warm worker at fx, aten and dynamo with fixes
asked for, as `fxlens check --show-fixes --level fx --level aten --level dynamo` does. A site is a class's
finding of the kinds issue 42 names (data-dependent control flow, graph breaks, a builtin or Python number on a
traced value, `.item()`/NumPy, in-place updates, a Proxy iterated: a mutable default, `sum(t)`, a message),
at fx, aten or dynamo, once per class and line (the levels reporting the same
line are one site). Each proven fix is then applied alone to a copy of the file and checked by
bench/fixes_check.py in a fresh process, raw torch only: the finding's levels trace, and the outputs and state
are equal on inputs the proof never used. A proof's cost is its own `seconds` against the class's trace at the
levels it re-traced (the levels that reported the line), split into the re-trace and the rest (loading the
edited copy, running both modules); against the class's trace at all three levels too. At fx alone the class's
trace is a failed symbolic_trace of a few ms, while what fxlens spends to give the class its fx level also builds
the instance and finds its inputs: bench/fixes_baseline.py measures that work per class, and fx-only proofs are said
against both.
Writes the "Fixes" section of bench/RESULTS.md (unless --no-write); `--save F` keeps the numbers as JSON and
`--before F` shows such an earlier measurement beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT / "server")]
from fxlens.engine.worker_client import TraceOptions, WorkerClient  # noqa: E402
from fxlens.fix_report import Fix, apply_edits  # noqa: E402
from fxlens.report import FileReport  # noqa: E402
from results_file import RESULTS_FILE, with_section  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "fixes"
LEVELS = ("fx", "aten", "dynamo")
# issue 42's kinds: data-dependent control flow, graph breaks, a builtin or Python number on a traced value,
# `.item()`/NumPy, in-place updates (through a view too), and what fx makes of a Proxy iterated (a mutable default
# walked, `sum(t)`, a message formatting a traced shape)
KINDS = {
    "data-dependent-control-flow",
    "graph-break",
    "builtin-on-proxy",
    "proxy-as-number",
    "item/numpy",
    "in-place",
    "write-through-view",
    "map-over-proxy",
}
PHASES = ("build", "load", "re-trace", "coverage", "compare")


async def _trace(files: list[Path]) -> dict[Path, tuple[FileReport, float, float]]:
    """Each file's report with fixes, the seconds it took, and the seconds of the same check without fixes (the
    two in turns, one worker)."""
    client = WorkerClient()
    await client.start()
    traced = {}
    try:
        for path in files:
            seconds = {}
            for fixes in (False, True):
                options = TraceOptions(levels=LEVELS, surface="check", cost=False, fixes=fixes, timeout=600)
                started = time.perf_counter()
                report = await client.analyse(str(path), path.read_text(), options)
                seconds[fixes] = time.perf_counter() - started
            traced[path] = (report, seconds[True], seconds[False])
    finally:
        await client.stop()
    return traced


def _shape(shape: list, sizes: dict[str, int]) -> list[int]:
    """An input's shape in numbers: a symbolic size ("B", "2*B") evaluated with the build's sizes."""
    return [d if isinstance(d, int) else int(eval(d, {"__builtins__": {}}, dict(sizes))) for d in shape]


def _others(report: FileReport) -> list[str]:
    """The findings of other kinds (counted nowhere above): "level: category" each."""
    return [
        f"{level}: {d.category}"
        for cls in report.classes
        for level, result in cls.levels.items()
        for d in result.diagnostics
        if d.level == level and d.severity in ("error", "warning") and d.category not in KINDS
    ]


def _sites(report: FileReport) -> dict[tuple[str, int], list[str]]:
    """(class, line) -> the findings there: the levels report one statement at different columns (fx at the
    value it failed on, dynamo at the call), and it is one site, as worker/fixes/find.py and the editor count it."""
    found: dict[tuple[str, int], list[str]] = {}
    for cls in report.classes:
        for level, result in cls.levels.items():
            for d in result.diagnostics:
                if d.level == level and d.severity in ("error", "warning") and d.category in KINDS:
                    found.setdefault((cls.name, d.line), []).append(f"{level}: {d.category}")
    return found


def _independent(path: Path, fix: Fix, shapes: list[list[int]], levels: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        fixed = Path(folder) / path.name
        fixed.write_text(apply_edits(path.read_text(), fix.edits))
        job = {
            "original": str(path),
            "fixed": str(fixed),
            "class": fix.class_name,
            "levels": levels,
            "inputs": shapes,
            "may_change": fix.proof.inputs_changed,
        }
        run = subprocess.run(
            [sys.executable, str(BENCH / "fixes_check.py"), json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    lines = run.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {"ok": False, "why": run.stderr.strip().splitlines()[-1:]}


def _baseline(files: list[Path]) -> dict[str, dict[str, dict[str, float]]]:
    """bench/fixes_baseline.py's measurement: file name -> class -> its fx work and fx trace (seconds)."""
    script = str(BENCH / "fixes_baseline.py")
    run = subprocess.run([sys.executable, script, *map(str, files)], capture_output=True, text=True, timeout=900)
    lines = run.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def _cost(fix: Fix, cls, work: float) -> dict:
    """Where one proof's time went, and the class's own trace it is measured against (`work`: what fxlens spends to
    give the class its fx level, bench/fixes_baseline.py)."""
    retrace = sum(c.seconds for c in fix.proof.levels)
    phases = fix.proof.phases
    return {
        "levels": [c.level for c in fix.proof.levels],
        "phases": {
            "build": phases.get("build", 0.0),
            "load": phases.get("load", 0.0),
            "re-trace": retrace,
            "coverage": phases.get("coverage", 0.0),
            "compare": phases.get("outputs", 0.0) - phases.get("coverage", 0.0),
        },
        "proof": fix.proof.seconds,
        "retrace": retrace,
        "rest": max(fix.proof.seconds - retrace, 0.0),  # loading the edited copy, running both modules
        "own_levels": sum(c.trace_seconds for c in fix.proof.levels),  # the class's trace at the proof's levels
        "own_all": sum(result.seconds for result in cls.levels.values()),  # ... at every level traced
        "own_work": work,
    }


def _median(costs: list[dict], key: str, over: str | None = None) -> float:
    values = [c[key] / c[over] if over else c[key] for c in costs if not over or c[over]]
    return statistics.median(values) if values else 0.0


def _worst(costs: list[dict], key: str, over: str) -> float:
    return max((c[key] / c[over] for c in costs if c[over]), default=0.0)


def _p90(costs: list[dict], key: str, over: str) -> float:
    values = sorted(c[key] / c[over] for c in costs if c[over])
    return values[min(len(values) - 1, int(0.9 * len(values)))] if values else 0.0


def _by_levels(costs: list[dict]) -> dict[str, dict]:
    """Per set of levels a proof re-traced: how many, the class's own trace there and the proof (medians), the
    ratio's p50/p90/worst, and the median of each phase of the proof."""
    groups: dict[str, list[dict]] = {}
    for c in costs:
        groups.setdefault("+".join(c["levels"]) or "none", []).append(c)
    return {
        levels: {
            "proofs": len(group),
            "own": _median(group, "own_levels"),
            "proof": _median(group, "proof"),
            "p50": _median(group, "proof", "own_levels"),
            "p90": _p90(group, "proof", "own_levels"),
            "worst": _worst(group, "proof", "own_levels"),
            "phases": {p: statistics.median(c["phases"][p] for c in group) for p in PHASES},
            "work": _median(group, "own_work"),
            "work_p50": _median(group, "proof", "own_work"),
            "work_p90": _p90(group, "proof", "own_work"),
            "work_worst": _worst(group, "proof", "own_work"),
        }
        for levels, group in sorted(groups.items())
    }


def measure(corpus: Path) -> dict:
    files = sorted(corpus.glob("*.py"))
    traced = asyncio.run(_trace(files))
    baseline = _baseline(files)
    rows, unfixed, failed_checks, costs, others = [], [], [], [], []
    for path, (report, seconds, plain) in traced.items():
        sites = _sites(report)
        others += _others(report)
        fixes = {(f.class_name, f.line): f for cls in report.classes for f in cls.fixes}
        for cls in report.classes:  # every proof run costs, proven or not (an `elif`'s site reuses its `if`'s)
            run = {repr(f.edits): f for f in cls.fixes if f.edits and f.proof.seconds}
            work = baseline.get(path.name, {}).get(cls.name, {}).get("work", 0.0)
            costs += [_cost(f, cls, work) for f in run.values()]
        proven = 0
        for key, levels in sites.items():
            fix = fixes.get(key)
            if fix is None or not fix.proven:
                why = fix.why_not() if fix is not None else "no rewrite knows this site"
                unfixed.append(f"{path.name}:{key[1]} {key[0]} ({', '.join(levels)}): {why}")
                continue
            proven += 1
            cls = report.find_class(fix.class_name)
            assert cls is not None
            shapes = [_shape(spec.shape or [], cls.build.sizes) for spec in cls.build.inputs]
            checked = [c.level for c in fix.proof.levels if not c.unclaimed]  # (the levels its proof says it fixes)
            verdict = _independent(path, fix, shapes, checked)
            if not verdict["ok"]:
                failed_checks.append(f"{path.name}:{key[1]} {key[0]} [{fix.rule}]: {verdict['why']}")
        rows.append({"file": path.name, "sites": len(sites), "proven": proven, "seconds": seconds, "without": plain})
    sites = sum(r["sites"] for r in rows)
    proven = sum(r["proven"] for r in rows)
    return {
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip(),
        "rows": rows,
        "sites": sites,
        "proven": proven,
        "share": proven / sites if sites else 0.0,
        "failed_checks": failed_checks,
        "unfixed": unfixed,
        "proofs": len(costs),
        "proof_median": _median(costs, "proof"),
        "retrace_median": _median(costs, "retrace"),
        "rest_median": _median(costs, "rest"),
        "cost_median": _median(costs, "proof", "own_levels"),
        "cost_max": _worst(costs, "proof", "own_levels"),
        "cost_p90": _p90(costs, "proof", "own_levels"),
        "by_levels": _by_levels(costs),
        "others": sorted(Counter(others).items(), key=lambda item: -item[1]),
        "cost_all_median": _median(costs, "proof", "own_all"),
        "cost_all_max": _worst(costs, "proof", "own_all"),
        "retrace_ratio_median": _median(costs, "retrace", "own_levels"),
        "check_ratio_median": statistics.median(r["seconds"] / r["without"] for r in rows) if rows else 0.0,
        "check_ratio_all": sum(r["seconds"] for r in rows) / sum(r["without"] for r in rows) if rows else 0.0,
    }


def _costs_line(found: dict) -> str:
    return (
        f"{found['proofs']} proofs: a proof {found['proof_median']:.2f} s (re-trace {found['retrace_median']:.2f} s, "
        f"loading the edited copy and running both modules {found['rest_median']:.2f} s); against the class's own "
        f"trace at the proof's levels median **{found['cost_median']:.2f}×** "
        + (f"(p90 {found['cost_p90']:.2f}×, " if "cost_p90" in found else "(")
        + f"worst {found['cost_max']:.2f}×), its "
        f"re-trace alone {found['retrace_ratio_median']:.2f}×; against the class's trace at all three levels median "
        f"{found['cost_all_median']:.2f}× (worst {found['cost_all_max']:.2f}×)"
        + (
            f"; the whole check with fixes against the same check without, per file median "
            f"{found['check_ratio_median']:.2f}×, all files {found['check_ratio_all']:.2f}×"
            if "check_ratio_all" in found  # (a measurement saved before this was measured has none)
            else ""
        )
    )


def section(found: dict, before: dict | None = None) -> str:
    lines = [
        "## Fixes that prove themselves (issue 42)",
        "",
        f"`python -m bench fixes` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {found['commit']}, "
        "tests/fixtures/fixes (code written here, library style), traced at fx, aten and dynamo with fixes asked for "
        "(as `fxlens check --show-fixes` asks); each proven fix then checked alone by bench/fixes_check.py (raw "
        "torch, fresh process, seeds the proof never used, each input also negated and ×10, eval and train). "
        "Medians over every proof run (proven or not), all in the same run.",
        "",
        "| file | sites | proven fix | check with fixes | without |",
        "|---|---|---|---|---|",
        *(
            f"| {r['file']} | {r['sites']} | {r['proven']} | {r['seconds']:.2f} s | {r['without']:.2f} s |"
            for r in found["rows"]
        ),
        f"| **all** | **{found['sites']}** | **{found['proven']} ({found['share']:.0%})** | | |",
        "",
        f"- Proven fixes that failed the independent check: **{len(found['failed_checks'])}** (target 0)"
        + "".join(f"\n  - {line}" for line in found["failed_checks"]),
        f"- Proof cost (target ≤ 2× the class's trace at that level): {_costs_line(found)}.",
        *(
            [
                f"- Before (commit {before['commit']}, the corpus then: {before['sites']} sites): {_costs_line(before)}"
                + (
                    "; proof ÷ own trace p50 per set of levels: "
                    + ", ".join(f"{levels} {g['p50']:.2f}×" for levels, g in before["by_levels"].items())
                    if "by_levels" in before
                    else ""
                )
                + "."
            ]
            if before
            else []
        ),
        *(
            [
                "- Per set of levels a proof re-traced (proofs; the class's own trace there and a proof, medians; "
                "proof ÷ own trace p50 / p90 / worst; a proof's phases, medians: build = the original module on "
                "real tensors, load = the edited copy imported and the instance's classes swapped, coverage = "
                "the inputs that run the replaced lines, compare = both modules on every input and mode):",
                *(
                    f"  - {levels}: {g['proofs']} proofs; own {g['own'] * 1000:.1f} ms, proof {g['proof'] * 1000:.0f} "
                    f"ms; {g['p50']:.2f}× / {g['p90']:.2f}× / {g['worst']:.2f}×; "
                    + ", ".join(f"{p} {g['phases'][p] * 1000:.0f} ms" for p in PHASES)
                    + (
                        f"; against what fxlens spends to give the class its fx level (instance, inputs, trace, "
                        f"shapes: median {g['work'] * 1000:.1f} ms) {g['work_p50']:.2f}× / {g['work_p90']:.2f}× / "
                        f"{g['work_worst']:.2f}×"
                        if levels == "fx" and g.get("work")
                        else ""
                    )
                    for levels, g in found["by_levels"].items()
                ),
            ]
            if "by_levels" in found
            else []
        ),
        *(
            [
                "- Findings of other kinds, not counted as sites: "
                + (", ".join(f"{what} ×{n}" for what, n in found["others"]) or "none")
            ]
            if "others" in found
            else []
        ),
        f"- Sites without a proven fix ({len(found['unfixed'])}), each with what its finding says:",
        *(f"  - {line}" for line in found["unfixed"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--save", type=Path, help="also write the measurement as JSON here (bench/results/...)")
    parser.add_argument("--before", type=Path, help="a --save'd earlier measurement, shown beside this one")
    args = parser.parse_args()
    found = measure(args.corpus)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(found, indent=1))
    text = section(found, json.loads(args.before.read_text()) if args.before else None)
    print(text)
    if not args.no_write:
        RESULTS_FILE.write_text(with_section(text, RESULTS_FILE.read_text()))


if __name__ == "__main__":
    main()

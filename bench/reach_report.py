"""bench/results/reach-fixtures.md from the result of bench/reach.py (pure: data in, Markdown out)."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"fx_reach": 0.90, "aten_reach": 0.75}


def _yes(value) -> str:
    return {True: "yes", False: "no", None: "?"}[value]


def _percent(entry: dict) -> str:
    ratio = entry["ratio"]
    return f"{entry['hit']} of {entry['of']} = {ratio:.0%}" if ratio is not None else "n/a"


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return done.stdout.strip()[:90]


def _agreement(row: dict) -> str:
    parts = []
    for level, verdict in row["agreement"].items():
        text = verdict["verdict"]
        if verdict["verdict"] == "agree":
            text += f" ({verdict['nodes']})"
        parts.append(f"{level}: {text}")
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(result: dict) -> str:
    s = result["summary"]
    lines = [
        "# Reach on real repositories (issue 11)",
        "",
        f"`python bench/reach.py` on `{_commit()}` — Python {platform.python_version()}. Every file of "
        "`tests/fixtures/repos` through `fxlens graph --json` with no directive, from its repository's root; "
        "raw torch on the constructions of `tests/fixtures/repos/reference.py` (CPU); node agreement on "
        "what fxlens says it built, rebuilt in raw torch.",
        "",
        "## Headline",
        "",
        "| measure | result | target | |",
        "|---|---|---|---|",
    ]
    for key, label in (
        ("fx_reach", "classes torch can fx-trace that fxlens shows an fx graph for"),
        ("aten_reach", "classes torch can export that fxlens shows an aten graph for"),
    ):
        entry = s[key]
        passed = entry["ratio"] is not None and entry["ratio"] >= TARGETS[key]
        lines.append(f"| {label} | {_percent(entry)} | ≥ {TARGETS[key]:.0%} | {'pass' if passed else '**FAIL**'} |")
    lines += [
        f"| classes with an fx / aten graph shown (of {s['classes']}) | {s['fx_shown']} / {s['aten_shown']} | | |",
        f"| node agreement with raw torch (levels) | {s['agree']} agree ({s['nodes_agreeing']} nodes), "
        f"{s['disagree']} disagree, {s['not_comparable']} not comparable | 100 % agree | "
        f"{'pass' if not s['disagree'] else '**FAIL**'} |",
        f"| files that failed to load | {len(result['load_failures'])} | 0 | "
        f"{'pass' if not result['load_failures'] else '**FAIL**'} |",
        "",
    ]
    lines += [
        "## Per class",
        "",
        "| file | class | raw fx | raw export | fxlens fx | fxlens aten | built | failure (fx / aten) | agreement |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        name = r["class"] if r["listed"] else f"{r['class']} (not in reference)"
        failure = " / ".join(c or "–" for c in (r["fx_category"], r["aten_category"]))
        lines.append(
            f"| {r['file']} | {name} | {_yes(r['raw_fx'])} | {_yes(r['raw_export'])} | {_yes(r['fx'])} | "
            f"{_yes(r['aten'])} | {r['built'] or '–'} | {failure} | {_agreement(r)} |"
        )
    lines += ["", "## Failure categories (fxlens, per level)", "", "| category | levels |", "|---|---|"]
    lines += [f"| `{c}` | {n} |" for c, n in s["failure_categories"].items()]
    lines += ["", "## Files that failed to load", ""]
    lines += [f"- `{key}`: {_cell(' · '.join(problems))[:400]}" for key, problems in result["load_failures"].items()]
    lines += ["- none"] if not result["load_failures"] else []
    problems = [(r, level, v) for r in result["rows"] for level, v in r["agreement"].items() if v["verdict"] != "agree"]
    lines += ["", "## Agreement: not agreeing or not comparable", ""]
    lines += [
        f"- {r['file']} {r['class']} ({level}): {v['verdict']} — {_cell(v['why'])[:300]}" for r, level, v in problems
    ]
    lines += ["- none"] if not problems else []
    raw_failures = [r for r in result["rows"] if r["raw_fx"] is False or r["raw_export"] is False]
    lines += [
        "",
        "## Where raw torch itself fails (the reference constructions)",
        "",
        "| file | class | symbolic_trace | torch.export |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['file']} | {r['class']} | {_cell(r['raw_fx_error'][:120]) or 'ok'} | "
        f"{_cell(r['raw_export_error'][:120]) or 'ok'} |"
        for r in raw_failures
    ]
    if result["reference_errors"]:
        lines += ["", "## Corpus files raw torch could not import", ""]
        lines += [f"- `{k}`: {_cell(v)[:300]}" for k, v in result["reference_errors"].items()]
    return "\n".join(lines) + "\n"

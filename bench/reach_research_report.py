"""bench/RESULTS.md's research-reach section from the result of bench/reach_research.py (pure: data in, Markdown
out)."""

from __future__ import annotations

import platform
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"fx_reach": 0.90, "aten_reach": 0.90}  # issue 41's "Done means"
HEADING = "## Reach on research-style code (issue 41)"


def _percent(entry: dict) -> str:
    return f"{entry['hit']} of {entry['of']} = {entry['ratio']:.0%}" if entry["ratio"] is not None else "n/a"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return done.stdout.strip()[:80]


def _yes(value) -> str:
    return {True: "yes", False: "no", None: "–"}[value]


def _headline(s: dict, files: list[dict]) -> list[str]:
    ratios = [f["fxlens"]["seconds"] / f["torch"]["seconds"] for f in files if f["torch"]["seconds"]]
    memory = [f["fxlens"]["peak_mb"] / f["torch"]["peak_mb"] for f in files if f["torch"]["peak_mb"]]
    lines = ["| measure | result | target | |", "|---|---|---|---|"]
    for key, label in (
        ("fx_reach", "classes raw torch fx-traces that fxlens shows an fx graph for"),
        ("aten_reach", "classes raw torch exports that fxlens shows an aten graph for"),
    ):
        passed = s[key]["ratio"] is not None and s[key]["ratio"] >= TARGETS[key]
        lines.append(f"| {label} | {_percent(s[key])} | ≥ {TARGETS[key]:.0%} | {'pass' if passed else '**FAIL**'} |")
    lines += [
        f"| node agreement with raw torch (levels shown) | {s['agree']} agree ({s['nodes_agreeing']} nodes), "
        f"{s['disagree']} disagree, {s['not_comparable']} not comparable | 100 % | "
        f"{'pass' if not s['disagree'] else '**FAIL**'} |",
        f"| `[internal]` errors | {s['internal']} | 0 | {'pass' if not s['internal'] else '**FAIL**'} |",
        f"| wall time, all files: fxlens / raw torch | {s['fxlens_seconds']:.0f} s / {s['torch_seconds']:.0f} s "
        f"(per file median {statistics.median(ratios):.1f}×) | | |"
        if ratios
        else "| wall time | n/a | | |",
        f"| peak RSS per file, fxlens ÷ raw torch | median {statistics.median(memory):.1f}×, max "
        f"{max(f['fxlens']['peak_mb'] for f in files):.0f} MB (raw torch max "
        f"{max(f['torch']['peak_mb'] for f in files):.0f} MB) | | |"
        if memory
        else "| peak RSS | n/a | | |",
    ]
    return lines


def _mechanisms(s: dict) -> list[str]:
    lines = [
        "| how fxlens built the class (its labels) | classes | fx shown (raw fx ok) | aten shown (raw export ok) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {_cell(name)} | {entry['classes']} | {entry['fx']} | {entry['aten']} |"
        for name, entry in s["by_mechanism"].items()
    ]
    return lines


def _wins(result: dict) -> list[str]:
    if "wins" not in result:
        return []
    before = result["baseline_summary"]
    lines = [
        "",
        f"Against the baseline: fx {_percent(before['fx_reach'])} → {_percent(result['summary']['fx_reach'])}; "
        f"aten {_percent(before['aten_reach'])} → {_percent(result['summary']['aten_reach'])}; "
        f"disagreements {before['disagree']} → {result['summary']['disagree']}; "
        f"`[internal]` {before['internal']} → {result['summary']['internal']}.",
        "",
        "| mechanism (the labels of the classes it reached since the baseline) | fx won | aten won | classes |",
        "|---|---|---|---|",
    ]
    for name, won in sorted(result["wins"].items(), key=lambda item: -len(item[1]["aten"]) - len(item[1]["fx"])):
        classes = ", ".join(sorted(set(won["fx"]) | set(won["aten"])))
        lines.append(f"| {_cell(name)} | {len(won['fx'])} | {len(won['aten'])} | {classes} |")
    return lines


def _files(files: list[dict]) -> list[str]:
    lines = [
        "| file | classes | fxlens s | raw torch s | × | fxlens peak MB | raw torch peak MB | `[internal]` |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in files:
        fx, raw = f["fxlens"], f["torch"]
        ratio = f"{fx['seconds'] / raw['seconds']:.1f}" if raw["seconds"] else "–"
        lines.append(
            f"| {f['file']} | {len(f['rows'])} | {fx['seconds']:.1f} | {raw['seconds']:.1f} | {ratio} | "
            f"{fx['peak_mb']:.0f} | {raw['peak_mb']:.0f} | {len(f['internal'])} |"
        )
    return lines


def _classes(files: list[dict]) -> list[str]:
    lines = [
        "| file | class | raw fx / export | fxlens fx / aten | built (labels) | failure (fx / aten) |",
        "|---|---|---|---|---|---|",
    ]
    for f in files:
        for r in f["rows"]:
            failure = " / ".join(c or "–" for c in (r["fx_category"], r["aten_category"]))
            lines.append(
                f"| {f['file']} | {r['class']} | {_yes(r['raw_fx'])} / {_yes(r['raw_export'])} | "
                f"{_yes(r['fx'])} / {_yes(r['aten'])} | {_cell(r['mechanism'])} | {failure} |"
            )
    return lines


def markdown(result: dict) -> str:
    s, files = result["summary"], result["files"]
    lines = [
        HEADING,
        "",
        f"`python -m bench reach-research` on `{_commit()}` — Python {platform.python_version()}, 2 shared cores. "
        f"{s['classes']} classes in {len(files)} files of `tests/fixtures/research` (eight repositories written here "
        "in the ways research code is published; no directive), each file through `fxlens graph --json` from its "
        "repository's root; raw torch on the hand-written constructions of `bench/research_reference.py` (CPU), one "
        "process per file; node agreement on what fxlens says it built, rebuilt in raw torch. Times and peak RSS "
        "(the process tree's maximum) are per file, the two sides in turns.",
        "",
        *_headline(s, files),
        *_wins(result),
        "",
        "Per mechanism (every class, by the labels fxlens gave it):",
        "",
        *_mechanisms(s),
        "",
        "<details><summary>Per file: time and peak memory</summary>",
        "",
        *_files(files),
        "",
        "</details>",
        "",
        "<details><summary>Per class</summary>",
        "",
        *_classes(files),
        "",
        "</details>",
    ]
    problems = [
        f"- {r['file']} {r['class']} ({level}): {v['verdict']} — {_cell(v['why'])[:240]}"
        for f in files
        for r in f["rows"]
        for level, v in r["agreement"].items()
        if v["verdict"] != "agree"
    ]
    internal = [f"- {f['file']}: {_cell(line)}" for f in files for line in f["internal"]]
    lines += ["", "Agreement: not agreeing or not comparable:", "", *(problems or ["- none"])]
    lines += ["", "`[internal]` errors:", "", *(internal or ["- none"])]
    return "\n".join(lines) + "\n"

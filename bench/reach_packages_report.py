"""bench/RESULTS.md's reach section from the result of bench/reach_packages.py (pure: data in, Markdown out)."""

from __future__ import annotations

import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"fx_reach": 0.90, "aten_reach": 0.80}  # issue 22's "Done means"
EXAMPLES = 5
# measured 2026-12-01/02 on a machine shared with other sessions (load average 5-7 on 2 cores)
COLD_RUN = (
    "A cold run (empty cache) took about 55 minutes here: raw torch's truth about 4 min for the seven "
    "packages, fxlens 1,162 s over 86 files (transformers 643 s, monai 249 s, diffusers 178 s), the raw-torch "
    "rebuilds for the agreement about 25 min (one process per file; a rebuild of a guessed full-size Mixtral "
    "on the CPU was killed for memory, exit -9, and says so below). A re-run with nothing changed takes ~30 s."
)

REJECTED = [
    (
        "timm 1.0.31",
        "`timm/layers/create_norm.py` and `norm_act.py` import `torchvision.ops.misc` at import time; "
        "`pip install timm` pulls torch 2.14.1 with the CUDA packages, or with torch pinned, torchvision 0.28.0, whose "
        "`import torchvision` fails next to CPU torch (`RuntimeError: operator torchvision::nms does not exist`)",
    ),
    ("open-clip-torch 3.3.0", "needs timm and torchvision (`open_clip/utils.py`, `transform.py` import it)"),
    (
        "segmentation-models-pytorch 0.6.0",
        "needs timm and torchvision (its encoders subclass torchvision's ResNet, VGG, DenseNet)",
    ),
    (
        "vit-pytorch 1.26.14",
        "its model files need only einops, but `vit_pytorch/__init__.py` imports `dino.py`, "
        "which imports torchvision: with `--no-deps`, `import vit_pytorch` fails, and so would every file of it "
        "until fxlens loads a file past a failing package `__init__` (issue 22, point 5)",
    ),
]


def _percent(entry: dict) -> str:
    return f"{entry['hit']} of {entry['of']} = {entry['ratio']:.0%}" if entry["ratio"] is not None else "n/a"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return done.stdout.strip()[:80]


def _yes(value) -> str:
    return {True: "yes", False: "no", None: "–"}[value]


def _agreement(row: dict) -> str:
    return "; ".join(
        f"{level}: {v['verdict']}" + (f" ({v['nodes']})" if v["verdict"] == "agree" else "")
        for level, v in row["agreement"].items()
    )


def headline(s: dict) -> list[str]:
    lines = ["| measure | result | target | |", "|---|---|---|---|"]
    for key, label in (
        ("fx_reach", "classes torch fx-traces that fxlens shows an fx graph for"),
        ("aten_reach", "classes torch exports that fxlens shows an aten graph for"),
    ):
        entry = s[key]
        passed = entry["ratio"] is not None and entry["ratio"] >= TARGETS[key]
        lines.append(f"| {label} | {_percent(entry)} | ≥ {TARGETS[key]:.0%} | {'pass' if passed else '**FAIL**'} |")
    lines.append(
        f"| node agreement where both trace (levels) | {s['agree']} agree ({s['nodes_agreeing']} nodes), "
        f"{s['disagree']} disagree, {s['not_comparable']} not comparable | 100 % | "
        f"{'pass' if not s['disagree'] and not s['not_comparable'] else '**FAIL**'} |"
    )
    return lines


def markdown(result: dict, argv: list) -> str:
    s = result["summary"]
    command = " ".join(["python bench/reach_packages.py", *argv])
    lines = [
        "## Reach on installed packages (issue 22)",
        "",
        f"{time.strftime('%Y-%m-%d')}, `{command}` on `{_commit()}`: Python {platform.python_version()}, "
        f"torch 2.13.0 CPU, 2 cores (bench at `nice -n 10`, `OMP_NUM_THREADS=1`); {result['seconds']} s this run "
        "(the cache under `bench/results/reach_packages/` serves what did not change). " + COLD_RUN,
        "",
        "**This replaces the earlier reach table, whose 94 % / 90 % measured `tests/fixtures/repos`: copies of "
        "public files edited where the real files fail. Those numbers said nothing about code nobody here "
        "wrote.** (`python bench/reach.py` still measures those fixtures, into `bench/results/`, until they "
        "are removed.)",
        "",
        "What is measured: real model code from pip-installed packages (`requirements-ci.txt` pins them), "
        "traced where pip put it. The truth is raw torch on what each package's own public constructors "
        "build at tiny sizes (`bench/reach_corpus.py`: config classes, factories, constructors; no weights): "
        "for the first instance of each model-file class in the built trees, `torch.fx.symbolic_trace(instance)` "
        "and `torch.export.export(instance, args, kwargs, strict=False)` with the inputs a forward pre-hook "
        "recorded in one CPU run of the top model. fxlens: `python -m fxlens graph FILE --json --level fx "
        "--level aten --timeout 300` (PYTHONPATH=server) with **no directive**, from an empty folder. "
        "Node agreement: each level fxlens shows, rebuilt in raw torch from what its report says it built, "
        "compared node by node (name, op, target, users, line; shapes where both have one).",
        "",
        "### Headline (all packages)",
        "",
    ]
    lines += headline(s)
    lines += [
        "",
        f"Model files: {s['model_files']} ({s['unimportable_files']} do not import); nn.Module classes "
        f"in them: {s['enumerated']}; classes the packages' constructors built (the denominator's pool): "
        f"{s['built']}"
        + (
            f", of which {s['unmeasured']} are in files fxlens has not been run on yet "
            "(`--cached-only`: left out of every number here)"
            if s["unmeasured"]
            else ""
        )
        + ".",
        "",
        "### Per package",
        "",
        "| package | model files | classes | built | torch fx | fxlens fx of those | torch export | "
        "fxlens aten of those | agreement (levels, nodes) | fxlens s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, p in result["packages"].items():
        q = p["summary"]
        lines.append(
            f"| {name} {p['version']} | {q['model_files']} | {q['enumerated']} | {q['built']} | "
            f"{q['fx_reach']['of']} | {_percent(q['fx_reach'])} | {q['aten_reach']['of']} | "
            f"{_percent(q['aten_reach'])} | {q['agree']} agree ({q['nodes_agreeing']}), {q['disagree']} "
            f"disagree, {q['not_comparable']} n/c | {p['fxlens_seconds']:.0f} |"
        )
    lines += [
        "",
        "### Where fxlens shows no graph that torch makes (failure categories)",
        "",
        "Counted per class and level among the classes torch traces at that level; fxlens's category and "
        "message (a class never built, or left without inputs, carries its build's reason).",
        "",
    ]
    for level in ("fx", "aten"):
        found = result["gaps"][level]
        lines += [f"#### {level}: {sum(len(v) for v in found.values())} classes", ""]
        for category, examples in found.items():
            lines.append(f"- **{category}**: {len(examples)}")
            lines += [f"  - `{e['file']}` {e['class']}: {_cell(e['message'])[:220]}" for e in examples[:EXAMPLES]]
        lines.append("")
    problems = [(r, lv, v) for r in result["rows"] for lv, v in r["agreement"].items() if v["verdict"] != "agree"]
    lines += ["### Agreement: not agreeing or not comparable", ""]
    lines += [f"- `{r['file']}` {r['class']} ({lv}): {v['verdict']}: {_cell(v['why'])[:250]}" for r, lv, v in problems]
    lines += ["- none"] if not problems else []
    lines += [
        "",
        "### Packages: pinned, rejected",
        "",
        "Pinned in `requirements-ci.txt`: "
        + ", ".join(f"{n}=={p['version']}" for n, p in result["packages"].items())
        + " (and their pure-Python dependencies). `pip install -r requirements-ci.txt` installs no CUDA "
        "package and no torchvision (checked with `pip install --dry-run`).",
        "",
        "Rejected:",
        "",
    ]
    lines += [f"- {name}: {why}" for name, why in REJECTED]
    failed = [(n, label, e) for n, p in result["packages"].items() for label, e in p["builders"].items() if e]
    unimportable = [(n, f, e) for n, p in result["packages"].items() for f, e in p["unimportable"].items()]
    lines += ["", "### Builders that failed, model files that do not import", ""]
    lines += [f"- {n} builder `{label}`: {_cell(e)[:200]}" for n, label, e in failed]
    lines += [f"- `{f}` ({n}): {_cell(e)[:200]}" for n, f, e in unimportable]
    lines += ["- none"] if not failed and not unimportable else []
    lines += [
        "",
        "### Per class",
        "",
        "| file | class | built by (instance) | torch fx | torch export | fxlens fx | fxlens aten | fxlens built | "
        "failure (fx / aten) | agreement |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        failure = " / ".join(r[f"{lv}_failure"][0] or "–" for lv in ("fx", "aten"))
        lines.append(
            f"| {r['file']} | {r['class']} | {_cell(r['builder'])} ({r['instance']}) | {_yes(r['raw_fx'])} | "
            f"{_yes(r['raw_export'])} | {_yes(r['fx'])} | {_yes(r['aten'])} | {r['built'] or '–'} | "
            f"{failure} | {_agreement(r)} |"
        )
    return "\n".join(lines) + "\n"

"""fxlens benchmarks, one command: hover latency (vs jedi-language-server), edit → fresh result and cold
start (vs raw torch), scale (vs raw torch.export), hover under load, a cold `fxlens check` of a real-model
tree (vs import torch and raw torch tracing the same classes), hover after an edit in big files.

    pip install -r bench/requirements.txt     # jedi-language-server, the hover peer
    python bench/run.py [--only hover,edit,cold,scale,load,tree,big] [--hovers 1200] [--rounds 5] [--runs 3]
                        [--scale-runs 1] [--scale-models gpt2-12,gpt2-48,llama70b]

Every comparison is measured in this one invocation, in turns, on the same machine state. Results go
to bench/results/<scenario>.json and the table to bench/RESULTS.md; pass/fail is printed against the
targets of issue 6 (nothing here is a test: tests never assert times).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from results_file import RESULTS_FILE, keep_other_sections  # noqa: E402

SCENARIOS = ("hover", "edit", "cold", "scale", "load", "tree", "big")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--only",
        default=",".join(SCENARIOS),
        help="comma-separated scenarios to run (default: all): " + ", ".join(SCENARIOS),
    )
    parser.add_argument("--hovers", type=int, default=1200, help="hovers per server (default 1200)")
    parser.add_argument("--rounds", type=int, default=5, help="edits per model in the edit benchmark")
    parser.add_argument("--runs", type=int, default=3, help="cold starts of each kind (also cold tree checks)")
    parser.add_argument("--scale-runs", type=int, default=1, help="runs per model in the scale benchmark")
    parser.add_argument("--scale-models", default="gpt2-12,gpt2-48,llama70b")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in args.only if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)} (choose from {', '.join(SCENARIOS)})")
    args.scale_models = tuple(m.strip() for m in args.scale_models.split(",") if m.strip())
    return args


def machine() -> dict:
    import torch  # only for its version: the benchmarks themselves run torch in other processes

    return {
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def check_requirements(scenarios: list[str]) -> None:
    if "hover" in scenarios and importlib.util.find_spec("jedi_language_server") is None:
        raise SystemExit(
            "the hover benchmark compares against jedi-language-server: "
            "pip install -r bench/requirements.txt (or leave it out: --only edit,cold,scale,load)"
        )


def run(args: argparse.Namespace) -> dict:
    from big_files import big_file_hovers
    from check_tree import tree_check
    from edits import cold_start, edit_to_result
    from latency import hover_under_load, hover_vs_jedi
    from scale import measure

    results = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="fxlens-bench-") as temp:
        folder = Path(temp)
        steps = {
            "hover": lambda: asyncio.run(hover_vs_jedi(_sub(folder, "hover"), args.hovers)),
            "edit": lambda: asyncio.run(edit_to_result(_sub(folder, "edit"), args.rounds)),
            "cold": lambda: asyncio.run(cold_start(_sub(folder, "cold"), args.runs)),
            "scale": lambda: measure(_sub(folder, "scale"), args.scale_runs, args.scale_models),
            "load": lambda: asyncio.run(hover_under_load(_sub(folder, "load"), args.hovers)),
            "tree": lambda: tree_check(args.runs),
            "big": lambda: asyncio.run(big_file_hovers(_sub(folder, "big"), args.rounds)),
        }
        for name in args.only:
            print(f"== {name} …", flush=True)
            results[name] = steps[name]()
            _write(name, {"machine": results["machine"], name: results[name]})
    return results


def _sub(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir()
    return path


def _write(name: str, data: dict) -> None:
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_requirements(args.only)
    from results_table import load_all, markdown, verdicts

    run(args)
    results = load_all()  # this run's scenarios, and the latest of any it did not run
    table = markdown(results)
    RESULTS_FILE.write_text(keep_other_sections(table, RESULTS_FILE.read_text() if RESULTS_FILE.exists() else ""))
    print(table)
    failed = [v for v in verdicts(results) if not v.passed]
    print(f"{len(failed)} target(s) missed" if failed else "all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())

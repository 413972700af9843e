"""The graph view's input for the bench models: `fxlens graph --json` on each model file, turned into the
payload the language server's fxlens.showGraph returns (render/graph_view.graph_payload), one per level.

    python bench/graph_view_reports.py OUT_DIR [--levels fx,aten,backward,dynamo] [--traces DIR] [MODEL_KEY ...]

writes OUT_DIR/<key>.json = {"fx": payload, "aten": payload, ...} for the model's top class (with
`--time`, also OUT_DIR/<key>.timing.json: seconds the server takes to render each payload). Used by the
graph view's benchmark (bench/graph_view.mjs) and its page tests (vscode-client/test/webview).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specs import MODELS, ROOT

sys.path.insert(0, str(ROOT / "server"))

from fxlens.render.graph_view import graph_payload
from fxlens.report import Build, ClassReport, InputSpec, level_from_json

TOP_CLASS = {"gpt2-12": "GPT", "gpt2-48": "GPT", "llama70b": "Llama", "small": "ResidualMLP"}
LEVELS = ("fx", "aten")


def cli_levels(path: Path, class_name: str, levels: tuple[str, ...]) -> list[dict]:
    command = [
        sys.executable,
        "-m",
        "fxlens",
        "graph",
        str(path),
        "--class",
        class_name,
        "--json",
        # the 70B-shaped model's four levels take minutes on 2 loaded cores: past the CLI's 120 s
        "--timeout",
        "900",
    ]
    # the fx level always: the backward and dynamo levels' groups borrow its module scopes, as in the
    # editor, where fx is traced first (`--levels backward` alone drew 800 loose boxes)
    for level in dict.fromkeys(("fx", *levels)):
        command += ["--level", level]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=path.parent, env={**os.environ, "PYTHONPATH": str(ROOT / "server")}
    )
    if done.returncode not in (0, 1):  # 1: a level failed, which the payload shows
        raise SystemExit(f"fxlens graph failed on {path}:\n{done.stderr}")
    objects = json.loads(done.stdout)
    objects = objects if isinstance(objects, list) else [objects]
    failed = [o["level"] for o in objects if not o.get("nodes")]
    if failed:  # a bench payload of a level that did not trace would time an empty graph
        print(
            f"{path.name}: no nodes at {', '.join(failed)}: {objects[0].get('diagnostics', [{}])[:1]}", file=sys.stderr
        )
    return objects


def traced(objects: list[dict], class_name: str) -> ClassReport:
    inputs = [InputSpec(a["name"]) for a in objects[0].get("inputs", {}).get("args", [])]
    return ClassReport(class_name, 0, 0, Build(inputs=inputs), levels={o["level"]: level_from_json(o) for o in objects})


def payloads(uri: str, cls: ClassReport, levels: tuple[str, ...] = LEVELS) -> dict:
    return {level: graph_payload(uri, cls, level) for level in levels if level in cls.levels}


def payload_seconds(uri: str, cls: ClassReport, levels: tuple[str, ...] = LEVELS, runs: int = 5) -> dict:
    """Median time the server spends turning a traced level into this payload (and into JSON)."""
    timings = {}
    for level in (lv for lv in levels if lv in cls.levels):
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            json.dumps(graph_payload(uri, cls, level))
            samples.append(time.perf_counter() - started)
        timings[level] = statistics.median(samples)
    return timings


def main(argv: list[str]) -> None:
    timed = "--time" in argv
    argv = [a for a in argv if a != "--time"]
    levels = LEVELS
    if "--levels" in argv:
        at = argv.index("--levels")
        levels = tuple(argv[at + 1].split(","))
        del argv[at : at + 2]
    # --traces DIR keeps each model's CLI output there and reads it back on the next run (the 70B-shaped
    # model's trace is minutes; the renderer and the page change far more often than the tracer)
    traces = None
    if "--traces" in argv:
        at = argv.index("--traces")
        traces = Path(argv[at + 1])
        del argv[at : at + 2]
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for key in argv[1:] or ["gpt2-12", "gpt2-48", "llama70b"]:
            path = MODELS[key].materialise(Path(folder))
            kept = traces / f"{key}.json" if traces else None
            objects = json.loads(kept.read_text()) if kept is not None and kept.exists() else []
            if not set(levels) <= {o["level"] for o in objects}:  # a kept trace without some level: again
                objects = cli_levels(path, TOP_CLASS[key], levels)
                kept is not None and kept.write_text(json.dumps(objects))
            cls, uri = traced(objects, TOP_CLASS[key]), path.resolve().as_uri()
            (out / f"{key}.json").write_text(json.dumps(payloads(uri, cls, levels)))
            if timed:
                (out / f"{key}.timing.json").write_text(json.dumps(payload_seconds(uri, cls, levels)))
            print(f"{key}: {out / (key + '.json')}")


if __name__ == "__main__":
    main(sys.argv[1:])

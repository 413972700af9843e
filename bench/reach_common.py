"""What bench/reach.py and bench/reach_packages.py share: running the fxlens CLI on a file, reading its
JSON by class, the failure category of a level, how to rebuild what a report says it built, and the
node-by-node comparison with raw torch. Pure but for the subprocess; imports nothing of the corpus."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FREE_SIZES = {"B": 2, "T": 8}  # fxlens's example sizes, unless the inputs say what B and T stood for
PARENT_DETAIL = re.compile(r"the `(?P<path>[^`]*)` instance built by (?P<parent>\w+)")
CALL_LINE = re.compile(r" \(line \d+\)$")


def fxlens_command(installed: bool, python: str) -> list[str]:
    return ["fxlens"] if installed else [python, "-m", "fxlens"]


def fxlens_env(installed: bool) -> dict:
    if installed:
        return dict(os.environ)
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "server"), os.environ.get("PYTHONPATH")])),
    }


def fxlens_json(
    path: Path, cwd: Path, args: tuple = (), installed: bool = False, python: str = sys.executable, timeout: float = 900
) -> dict:
    """One `fxlens graph PATH --json [args]` run from `cwd`: its class objects and load problems."""
    done = subprocess.run(
        [*fxlens_command(installed, python), "graph", str(path), "--json", *args],
        cwd=cwd,
        env=fxlens_env(installed),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return graph_result(done.returncode, done.stdout, done.stderr)


def fxlens_json_files(
    paths: list[Path], cwd: Path, args: tuple = (), python: str = sys.executable, timeout: float = 900
) -> dict[str, dict]:
    """One `fxlens graph PATH... --json [args]` run from `cwd` (one worker traces them all; `timeout` per file):
    each path's class objects and load problems as `fxlens_json` gives them, by the path's text."""
    done = subprocess.run(
        [*fxlens_command(False, python), "graph", *map(str, paths), "--json", *args],
        cwd=cwd,
        env=fxlens_env(False),
        capture_output=True,
        text=True,
        timeout=timeout * len(paths),
    )
    objects = _objects(done.stdout)
    runs = {}
    for path in map(str, paths):
        # what stderr says of this file names it: its load notes, why it could not be graphed
        named = "\n".join(line for line in done.stderr.splitlines() if f"{path}:" in line)
        stderr = named if objects else done.stderr  # no JSON at all: all it said, for every file
        runs[path] = _result(done.returncode, [o for o in objects if o["file"] == path], stderr)
    return runs


def fxlens_json_repositories(models: list, timeout: float = 900) -> dict[str, dict]:
    """A corpus's model files (each with `repo`, `root`, `file`, `key`) -> each one's part of its repository's one
    `fxlens graph --json` run from the repository's root (one worker start a repository; `timeout` per file)."""
    repositories: dict[str, list] = defaultdict(list)
    for model in models:
        repositories[model.repo].append(model)
    runs = {}
    for files in repositories.values():
        by_path = fxlens_json_files([m.file.resolve() for m in files], files[0].root, timeout=timeout)
        runs.update({m.key: by_path[str(m.file.resolve())] for m in files})
    return runs


def _objects(stdout: str) -> list[dict]:
    if stdout.strip():
        try:
            parsed = json.loads(stdout)
            return parsed if isinstance(parsed, list) else [parsed]
        except json.JSONDecodeError:
            pass
    return []


def graph_result(exit_code: int, stdout: str, stderr: str) -> dict:
    """What one `fxlens graph --json` run said: its class objects, load problems, exit and stderr's end."""
    return _result(exit_code, _objects(stdout), stderr)


def _result(exit_code: int, objects: list[dict], stderr: str) -> dict:
    load = [line.strip() for line in stderr.splitlines() if line.rstrip().endswith("[load]")]
    load += [f"{d['line']}: {d['message']}" for o in objects for d in o["diagnostics"] if d["category"] == "load"]
    return {
        "exit": exit_code,
        "objects": objects,
        "load": sorted(set(load)),
        "stderr": stderr.strip()[-2000:],
    }


def by_class(run: dict) -> dict:
    """class -> level -> the CLI's JSON object."""
    out: dict = defaultdict(dict)
    for obj in run["objects"]:
        out[obj["class"]][obj["level"]] = obj
    return out


def shown(obj: dict | None) -> bool:
    return bool(obj and obj["ok"] and obj["nodes"])


def failure_category(level: str, levels: dict) -> str:
    """The category of the level's first error; a level that failed for the class's reason (it was never
    built) carries none itself, so that reason's category."""
    obj = levels.get(level)
    if obj is None or obj["ok"]:
        return ""
    for severities in (("error",), ("warning",)):
        for candidate in [obj, *levels.values()]:
            found = [d["category"] for d in candidate["diagnostics"] if d["severity"] in severities]
            if found:
                return found[0]
    return "(no diagnostic)"


def _calls_with_inputs(text: str) -> bool:
    """`Ctor(args)(inputs)` (a directive with inputs) rather than `Ctor(args)`."""
    try:
        expr = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call)


def recipe(class_name: str, levels: dict, classes: dict, depth: int = 0) -> dict | None:
    """How to rebuild what fxlens built for this class, from the report alone (None: it does not say).

    kinds: `directive` (constructor and inputs in one expression), `expr` (a constructor expression and
    the inputs the report lists), `parent` (the instance at `path` of the parent's rebuild, called with
    what the parent gave it, or with the inputs the report lists when those were inferred)."""
    inputs = next(iter(levels.values()))["inputs"]
    built, detail, specs = inputs["built"], inputs["detail"], inputs["args"]
    if built == "parent":
        match = PARENT_DETAIL.search(detail)
        parent = match and classes.get(match.group("parent"))
        inner = parent and depth < 4 and recipe(match.group("parent"), parent, classes, depth + 1)
        if not inner:
            return None
        return {
            "kind": "parent",
            "parent": inner,
            "path": match.group("path"),
            "inputs": None if inputs["source"] == "parent" else specs,
            "specs": specs,
        }
    text = inputs.get("directive") or (detail if built == "directive" else "")
    if built == "found" and not text:
        return None  # found elsewhere, and the file cannot spell it: nothing to rebuild from the report
    if text and _calls_with_inputs(text):
        return {"kind": "directive", "text": text}
    build = text or (f"{class_name}()" if built == "no-arguments" else CALL_LINE.sub("", detail))
    if not build or built == "unbuilt":
        return None
    return {"kind": "expr", "build": build, "inputs": specs}


def free_sizes(specs: list[dict], shapes: list | None) -> dict:
    """What B and T stood for: read off the inputs' named dims against the inputs torch was given."""
    sizes = dict(FREE_SIZES)
    for spec, shape in zip(specs, shapes or []):
        for named, real in zip(spec.get("shape") or [], shape or []):
            if isinstance(named, str) and named.isidentifier():
                sizes[named] = real
    return sizes


def _size(size, raw, sizes: dict) -> bool:
    if isinstance(size, int):
        return size == raw
    try:
        return eval(str(size), {"__builtins__": {}}, sizes) == raw
    except Exception:  # noqa: BLE001 - a size known only at run time (`u0`): any value agrees
        return True


def compare(nodes: list[dict], rows: list[list], sizes: dict | None = None) -> tuple[bool, str, int]:
    """(agree, first difference, nodes whose shapes were compared) between fxlens's nodes and torch's rows;
    `sizes` gives the symbolic sizes of fxlens's shapes their values in torch's example."""
    sizes = sizes or FREE_SIZES
    if len(nodes) != len(rows):
        return False, f"{len(nodes)} nodes, torch has {len(rows)}", 0
    shaped = 0
    for node, (name, op, target, users, line, shape, dtype) in zip(nodes, rows):
        ours = (node["name"], node["op"], node["target"], node["num_users"], node["line"])
        if ours != (name, op, target, users, line):
            return False, f"{ours} != torch {(name, op, target, users, line)}", shaped
        if node["shape"] is not None and shape is not None:
            shaped += 1
            if (
                len(node["shape"]) != len(shape)
                or node["dtype"] != dtype
                or not all(_size(ours, theirs, sizes) for ours, theirs in zip(node["shape"], shape))
            ):
                return False, f"{name}: shape {node['shape']} {node['dtype']} != torch {shape} {dtype}", shaped
    return True, "", shaped


def agreement(obj: dict, theirs: dict) -> tuple[bool, str, int]:
    """compare() for one level's CLI object and raw torch's rebuild of it."""
    return compare(obj["nodes"], theirs["rows"], free_sizes(obj["inputs"]["args"], theirs.get("inputs")))

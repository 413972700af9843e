"""The raw-torch side of bench/reach_research.py, one process per model file of tests/fixtures/research (so that
its time and peak memory are the file's own, and no file sees another's modules):

    truth    import the file the way its repository's scripts do and, per class, build the hand-written
             reference construction (bench/research_reference.py) on the CPU, then ask torch.fx.symbolic_trace
             and torch.export.export (non-strict) whether they take it, with their node counts;
    rebuild  rebuild what fxlens reported it built (bench/reach_rebuild.py) and list raw torch's nodes at each
             level fxlens showed, for the node-by-node agreement.

    python bench/reach_research_torch.py < request.json > answer.json
    request: {"mode": "truth" | "rebuild", "file": "<repo>/<path>", "jobs": [...]}
             {"mode": "files", "files": {"<repo>/<path>": [jobs], ...}}: both, per file, each repository's files
             in one child forked from here (torch imported once, a repository's modules once for its files, as its
             own scripts import them: the test's way, not timed)
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

STARTED = time.perf_counter()
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from reach_rebuild import rebuild, reference_truth, serve  # noqa: E402
from research_reference import CORPUS, ModelFile, scope_helpers  # noqa: E402


def truth(model: ModelFile, scope: dict) -> dict:
    return reference_truth(model.classes, lambda: scope)


def _answered(request: dict) -> dict:
    try:
        return answer(request)
    except BaseException:  # noqa: BLE001 - the file's failure is the answer, with its traceback
        return {"error": traceback.format_exc()[-3000:]}


def _both(key: str, jobs: list) -> dict:
    """One file's truth and rebuilds (or why not)."""
    rebuilds = _answered({"mode": "rebuild", "file": key, "jobs": jobs}) if jobs else {"rebuilds": {}}
    return {**_answered({"mode": "truth", "file": key}), **rebuilds}


def _in_a_child(files: dict) -> dict:
    """`_both` for each file of one repository in a forked child, so that no repository sees another's modules
    or sys.path."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(readable)
        result = {key: _both(key, jobs) for key, jobs in files.items()}
        with os.fdopen(writable, "w") as pipe:
            pipe.write(json.dumps(result))
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as pipe:
        written = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not written:
        return {key: {"error": f"the child of its repository ended with status {status}"} for key in files}
    return json.loads(written)


def answer(request: dict) -> dict:
    if request["mode"] == "files":
        repository = {m.key: m.repo for m in CORPUS}
        by_repository: dict[str, dict] = {}
        for key, jobs in request["files"].items():
            by_repository.setdefault(repository[key], {})[key] = jobs
        return {key: one for files in by_repository.values() for key, one in _in_a_child(files).items()}
    model = {m.key: m for m in CORPUS}[request["file"]]
    imported = time.perf_counter()
    module = model.imported()
    scope = {**vars(module), **scope_helpers()}
    if request["mode"] == "truth":
        classes = truth(model, scope)
        done = time.perf_counter()
        return {"truth": classes, "seconds": done - STARTED, "trace_seconds": done - imported}
    path = str(model.file.resolve())
    return {"rebuilds": {job["class"]: rebuild(job, scope, path) for job in request["jobs"]}}


if __name__ == "__main__":
    serve(answer)

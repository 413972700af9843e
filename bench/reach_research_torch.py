"""The raw-torch side of bench/reach_research.py, one process per model file of tests/fixtures/research (so that
its time and peak memory are the file's own, and no file sees another's modules):

    truth    import the file the way its repository's scripts do and, per class, build the hand-written
             reference construction (bench/research_reference.py) on the CPU, then ask torch.fx.symbolic_trace
             and torch.export.export (non-strict) whether they take it, with their node counts;
    rebuild  rebuild what fxlens reported it built (bench/reach_rebuild.py) and list raw torch's nodes at each
             level fxlens showed, for the node-by-node agreement.

    python bench/reach_research_torch.py < request.json > answer.json
    request: {"mode": "truth" | "rebuild", "file": "<repo>/<path>", "jobs": [...]}
             {"mode": "files", "files": {"<repo>/<path>": [jobs], ...}}: both, per file, each file in a child
             forked from here (torch imported once: the test's way, not timed)
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


def _in_a_child(request: dict) -> dict:
    """`answer(request)` in a forked child, so that no file sees another's modules or sys.path."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(readable)
        try:
            result = answer(request)
        except BaseException:  # noqa: BLE001 - the file's failure is the answer, with its traceback
            result = {"error": traceback.format_exc()[-3000:]}
        with os.fdopen(writable, "w") as pipe:
            pipe.write(json.dumps(result))
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as pipe:
        written = pipe.read()
    _, status = os.waitpid(pid, 0)
    return json.loads(written) if written else {"error": f"the child ended with status {status}"}


def answer(request: dict) -> dict:
    if request["mode"] == "files":
        return {
            key: {
                **_in_a_child({"mode": "truth", "file": key}),
                **(_in_a_child({"mode": "rebuild", "file": key, "jobs": jobs}) if jobs else {"rebuilds": {}}),
            }
            for key, jobs in request["files"].items()
        }
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

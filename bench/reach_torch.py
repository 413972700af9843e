"""The raw-torch side of bench/reach.py, in its own process (so the corpus's imports never meet fxlens's):
import one repository's model files the way its scripts do and, per class,

    truth    build the reference construction (tests/fixtures/repos/reference.py) on the CPU and ask
             torch.fx.symbolic_trace and torch.export.export (non-strict) whether they trace it;
    rebuild  rebuild what fxlens reported it built (its directive, its constructor call and inferred inputs,
             or the instance a parent built, with the inputs that parent gave it) and list raw torch's nodes
             at each level (bench/torch_nodes.py), for the node-by-node agreement check;
    time     the cold baseline of the benchmark row: fx + export of every reference class of every file;
    time-rebuilds  the like-for-like baseline: fx + export of what fxlens built (the `rebuild` jobs of
             every file, as above), one cold process, timed.

    python bench/reach_torch.py < request.json > answer.json
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests" / "fixtures" / "repos"))
import torch  # noqa: E402
from reach_rebuild import error_text, reference_truth, serve  # noqa: E402
from reach_rebuild import rebuild as rebuild_in  # noqa: E402
from reference import CORPUS, ModelFile, envs  # noqa: E402


def namespace(module) -> dict:
    return {**vars(module), "torch": torch, "nn": torch.nn, "envs": envs}


def truth(model: ModelFile, module) -> dict:
    """Per class: does raw torch fx-trace and export the reference construction, and with how many nodes."""
    return reference_truth(model.classes, lambda: namespace(module))


def _each_file_imported(keys: list[str]):
    """(model file, its module) for each key in turn; what a file imported of its repository is forgotten
    after it (repositories reuse top-level names such as `model`), torch's modules stay."""
    files = {m.key: m for m in CORPUS}
    for key in keys:
        model = files[key]
        before = set(sys.modules)
        saved_path = list(sys.path)
        yield model, model.imported()
        root = str(model.root.resolve())
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(root):
                del sys.modules[name]
        sys.path[:] = saved_path


def time_all() -> dict:
    """fx + export of every reference class of the corpus, one process (the benchmark's baseline)."""
    start = time.perf_counter()
    traced = 0
    for model, module in _each_file_imported([m.key for m in CORPUS]):
        results = truth(model, module)
        traced += sum(bool(r.get("fx_ok")) + bool(r.get("export_ok")) for r in results.values())
    return {"seconds": time.perf_counter() - start, "traced_levels": traced}


def time_rebuilds(keys: list[str], jobs: list[dict]) -> dict:
    """fx + export of what fxlens built for each class (its directives, constructor calls, inputs and
    parents' instances), one process: raw torch doing the work fxlens did, on the same instances."""
    start = time.perf_counter()
    traced = failed = 0
    for model, module in _each_file_imported(keys):
        path, scope = str(model.file.resolve()), namespace(module)
        for job in (j for j in jobs if j["file"] == model.key):
            rows = rebuild_in(job, scope, path)
            traced += sum("rows" in level for level in rows.values())
            failed += sum("rows" not in level for level in rows.values())
    return {"seconds": time.perf_counter() - start, "traced_levels": traced, "failed_levels": failed}


def answer(request: dict) -> dict:
    if request.get("mode") == "time":
        return time_all()
    if request.get("mode") == "time-rebuilds":
        return time_rebuilds(request["files"], request["jobs"])
    files = {m.key: m for m in CORPUS}
    out: dict = {"truth": {}, "rebuilds": [], "import_errors": {}}
    for key in request["files"]:
        model = files[key]
        try:
            module = model.imported()
        except Exception as error:  # noqa: BLE001 - the corpus itself is broken: say so
            out["import_errors"][key] = error_text(error) + "\n" + traceback.format_exc(limit=-3)
            continue
        if request.get("truth", True):
            out["truth"][key] = truth(model, module)
        path = str(model.file.resolve())
        for job in request.get("jobs", []):
            if job["file"] == key:
                out["rebuilds"].append({"file": key, "class": job["class"], **rebuild_in(job, namespace(module), path)})
    return out


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()

"""Raw torch on the corpus of tests/fixtures/repos, in its own interpreter (nothing of fxlens loaded): import
one model file the way its repository's code does and rebuild what fxlens said it built, then list raw
torch's nodes at each level (bench/reach_rebuild.py, the rebuild the installed-package benchmark uses too).

    python raw_torch_corpus.py < request.json > answer.json

Request: {"file": "<repo>/<path>", "jobs": [{"class", "levels", "recipe"}]}, a recipe as bench/reach.py's
`recipe` makes it from the report: `directive` (one expression building and calling), `expr` (a constructor
expression, and the inputs the report lists), `parent` (the instance at `path` of the parent's rebuild,
called as the parent's run called it, or with the inputs the report lists).
A package the corpus marks `stub_packages` (its `__init__` imports what is not installed) is stood in for
by an empty package of the same `__path__`, as a user who never imports the package top would see it.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import types
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "bench"))
sys.path.insert(0, str(TESTS / "fixtures" / "repos"))
from reference import CORPUS, envs  # noqa: E402

import torch  # noqa: E402
from reach_rebuild import rebuild  # noqa: E402


def import_model(model):
    roots = [str((model.root / folder).resolve()) for folder in model.sys_path]
    sys.path[:0] = [r for r in roots if r not in sys.path]
    for package in model.stub_packages:
        folder = next(Path(r) / package for r in roots if (Path(r) / package / "__init__.py").is_file())
        stub = types.ModuleType(package)
        stub.__path__ = [str(folder)]
        sys.modules[package] = stub
    return importlib.import_module(model.module)


def answer(request: dict) -> dict:
    model = {m.key: m for m in CORPUS}[request["file"]]
    module = import_model(model)
    scope = {**vars(module), "torch": torch, "nn": torch.nn, "envs": envs}
    return {"rebuilds": {job["class"]: rebuild(job, scope, str(model.file.resolve())) for job in request["jobs"]}}


def main() -> None:
    request = json.load(sys.stdin)
    stdout = os.fdopen(os.dup(1), "w")
    with contextlib.redirect_stdout(sys.stderr):  # a model's print() must not corrupt the answer
        os.dup2(2, 1)
        result = answer(request)
    stdout.write(json.dumps(result))
    stdout.flush()


if __name__ == "__main__":
    main()

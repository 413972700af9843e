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

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "bench"))
sys.path.insert(0, str(TESTS / "fixtures" / "repos"))
import torch  # noqa: E402
from reach_rebuild import rebuild, serve  # noqa: E402
from reference import CORPUS, envs  # noqa: E402


def answer(request: dict) -> dict:
    model = {m.key: m for m in CORPUS}[request["file"]]
    module = model.imported()
    scope = {**vars(module), "torch": torch, "nn": torch.nn, "envs": envs}
    return {"rebuilds": {job["class"]: rebuild(job, scope, str(model.file.resolve())) for job in request["jobs"]}}


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()

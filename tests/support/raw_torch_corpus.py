"""Raw torch on the corpus of tests/fixtures/repos, in its own interpreter (nothing of fxlens loaded): import
each model file the way its repository's code does and rebuild what fxlens said it built, then list raw
torch's nodes at each level (bench/reach_rebuild.py, the rebuild the installed-package benchmark uses too).

    python raw_torch_corpus.py < request.json > answer.json

Request: {"files": {"<repo>/<path>": [{"class", "levels", "recipe"}, ...], ...}}, a recipe as bench/reach.py's
`recipe` makes it from the report: `directive` (one expression building and calling), `expr` (a constructor
expression, and the inputs the report lists), `parent` (the instance at `path` of the parent's rebuild,
called as the parent's run called it, or with the inputs the report lists).
Answer: {"<repo>/<path>": {"rebuilds": {class: rows per level}} or {"error": why the file could not be rebuilt}}.
A package the corpus marks `stub_packages` (its `__init__` imports what is not installed) is stood in for
by an empty package of the same `__path__`, as a user who never imports the package top would see it.

torch is imported once; each repository's files are imported and rebuilt in one child forked from here, so no
repository sees another's modules or sys.path (as if each had an interpreter of its own, without paying torch's
import each time), and a repository's files share theirs, as the repository's own scripts do.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "bench"))
sys.path.insert(0, str(TESTS / "fixtures" / "repos"))
import torch  # noqa: E402
from reach_rebuild import rebuild, serve  # noqa: E402
from reference import CORPUS, envs  # noqa: E402


def _rebuilds(key: str, jobs: list) -> dict:
    model = {m.key: m for m in CORPUS}[key]
    module = model.imported()
    scope = {**vars(module), "torch": torch, "nn": torch.nn, "envs": envs}
    return {job["class"]: rebuild(job, scope, str(model.file.resolve())) for job in jobs}


def _in_a_child(files: dict) -> dict:
    """`_rebuilds` of each file of one repository, in a forked child: each file's answer, or why it gave none."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(readable)
        answers = {}
        for key, jobs in files.items():
            try:
                answers[key] = {"rebuilds": _rebuilds(key, jobs)}
            except BaseException:  # noqa: BLE001 - the file's failure is its answer, with its traceback
                answers[key] = {"error": traceback.format_exc()}
        with os.fdopen(writable, "w") as pipe:
            pipe.write(json.dumps(answers))
        sys.stderr.flush()
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as pipe:
        written = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not written:
        return {key: {"error": f"the child rebuilding its repository ended with status {status}"} for key in files}
    return json.loads(written)


def answer(request: dict) -> dict:
    repository = {m.key: m.repo for m in CORPUS}
    by_repository: dict[str, dict] = {}
    for key, jobs in request["files"].items():
        by_repository.setdefault(repository[key], {})[key] = jobs
    return {key: one for files in by_repository.values() for key, one in _in_a_child(files).items()}


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()

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

torch is imported once; each file is imported and rebuilt in a child forked from here, so no file sees
another's modules or sys.path (as if each had an interpreter of its own, without paying torch's import each time).
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


def _in_a_child(key: str, jobs: list) -> dict:
    """`_rebuilds` in a forked child: its answer, or why it gave none."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(readable)
        try:
            answer = {"rebuilds": _rebuilds(key, jobs)}
        except BaseException:  # noqa: BLE001 - the file's failure is the answer, with its traceback
            answer = {"error": traceback.format_exc()}
        with os.fdopen(writable, "w") as pipe:
            pipe.write(json.dumps(answer))
        sys.stderr.flush()
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as pipe:
        written = pipe.read()
    _, status = os.waitpid(pid, 0)
    return json.loads(written) if written else {"error": f"the child rebuilding it ended with status {status}"}


def answer(request: dict) -> dict:
    return {key: _in_a_child(key, jobs) for key, jobs in request["files"].items()}


def main() -> None:
    serve(answer)


if __name__ == "__main__":
    main()

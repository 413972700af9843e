"""Raw torch on the corpus of tests/fixtures/repos, in its own interpreter (nothing of fxlens loaded): import
one model file the way its repository's code does and rebuild what fxlens said it built, then list raw
torch's nodes at each level (bench/torch_nodes.py, the rows every test compares with).

    python raw_torch_corpus.py < request.json > answer.json

Request: {"file": "<repo>/<path>", "jobs": [{"class", "levels", "recipe"}]}, a recipe as bench/reach.py's
`recipe` makes it from the report: `directive` (one expression building and calling), `expr` (a constructor
expression, and the inputs the report lists), `parent` (the instance at `path` of the parent's rebuild,
called as the parent's run called it, or with the inputs the report lists).
A package the corpus marks `stub_packages` (its `__init__` imports what is not installed) is stood in for
by an empty package of the same `__path__`, as a user who never imports the package top would see it.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
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
from torch_nodes import export_rows, first_call_of, fx_concrete_args, fx_rows  # noqa: E402

FREE_SIZES = {"B": 2, "T": 8}  # what fxlens names the batch and sequence dims of its example inputs


def import_model(model):
    roots = [str((model.root / folder).resolve()) for folder in model.sys_path]
    sys.path[:0] = [r for r in roots if r not in sys.path]
    for package in model.stub_packages:
        folder = next(Path(r) / package for r in roots if (Path(r) / package / "__init__.py").is_file())
        stub = types.ModuleType(package)
        stub.__path__ = [str(folder)]
        sys.modules[package] = stub
    return importlib.import_module(model.module)


def _tensor(spec: dict, device: str):
    if spec.get("shape") is None:
        return ast.literal_eval(spec["value"]) if spec.get("value") is not None else None
    shape = [s if isinstance(s, int) else eval(str(s), {}, dict(FREE_SIZES)) for s in spec["shape"]]
    return torch.zeros(shape, dtype=getattr(torch, spec["dtype"]), device=device)


def _called_with(instance, specs: list, device: str):
    """Positional while the forward's parameters are positional, keywords after, as a user calls it."""
    parameters = inspect.signature(instance.forward).parameters
    args, kwargs = [], {}
    for spec in specs:
        value, param = _tensor(spec, device), parameters.get(spec["name"])
        if not kwargs and param is not None and param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            args.append(value)
        else:
            kwargs[spec["name"]] = value
    return instance, tuple(args), kwargs


def build(recipe: dict, scope: dict, device: str):
    evaluate = lambda node: eval(compile(ast.Expression(node), "<recipe>", "eval"), scope)  # noqa: E731
    with torch.device(device):
        if recipe["kind"] == "directive":
            call = ast.parse(recipe["text"], mode="eval").body
            return (evaluate(call.func), tuple(evaluate(a) for a in call.args),
                    {k.arg: evaluate(k.value) for k in call.keywords})
        if recipe["kind"] == "expr":
            return _called_with(eval(recipe["build"], scope), recipe["inputs"], device)
        parent, args, kwargs = build(recipe["parent"], scope, device)
        child = parent.get_submodule(recipe["path"])
        if recipe.get("inputs") is not None:
            return _called_with(child, recipe["inputs"], device)
        seen = first_call_of(parent, recipe["path"], args, kwargs)
        if seen is None and recipe.get("specs"):
            return _called_with(child, recipe["specs"], device)
        if seen is None:
            raise RuntimeError(f"running the parent never called `{recipe['path']}`")
        return (child, *seen)


def rebuild(job: dict, scope: dict, path: str) -> dict:
    """Per level: raw torch's rows on meta as fxlens builds, else on the CPU, else (fx) the shapes meta got to."""
    out: dict = {}
    for level in job["levels"]:
        errors = []
        for device, partial in (("meta", False), ("cpu", False), ("meta", True)):
            if partial and level != "fx":
                continue
            try:
                torch.manual_seed(0)
                instance, args, kwargs = build(job["recipe"], scope, device)
                if kwargs:
                    bound = inspect.signature(instance.forward).bind(*args, **kwargs)
                    bound.apply_defaults()
                    positional = tuple(bound.arguments.values())
                else:
                    positional = args
                if level == "fx":
                    rows = fx_rows(instance, positional, path, partial, fx_concrete_args(instance, args, kwargs))
                else:
                    rows = export_rows(torch.export.export(instance, args, kwargs, strict=False), path)
                out[level] = {"rows": [list(r) for r in rows],
                              "inputs": [list(x.shape) if isinstance(x, torch.Tensor) else None for x in positional]}
                break
            except Exception as error:  # noqa: BLE001 - recorded: the test says it could not compare
                errors.append(f"{device}: {type(error).__name__}: {str(error).strip()[:200]}")
        else:
            out[level] = {"error": "; ".join(errors)}
    return out


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

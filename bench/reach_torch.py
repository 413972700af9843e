"""The raw-torch side of bench/reach.py, in its own process (so the corpus's imports never meet fxlens's):
import one repository's model files the way its scripts do and, per class,

    truth    build the reference construction (tests/fixtures/repos/reference.py) on the CPU and ask
             torch.fx.symbolic_trace and torch.export.export (non-strict) whether they trace it;
    rebuild  rebuild what fxlens reported it built (its directive, its constructor call and inferred inputs,
             or the instance a parent built, with the inputs that parent gave it) and list raw torch's nodes
             at each level (bench/torch_nodes.py), for the node-by-node agreement check;
    time     the cold baseline of the benchmark row: fx + export of every reference class of every file.

    python bench/reach_torch.py < request.json > answer.json
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import json
import os
import sys
import time
import traceback
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests" / "fixtures" / "repos"))
from reference import CORPUS, ModelFile, envs  # noqa: E402

import torch  # noqa: E402
from torch_nodes import export_rows, first_call_of, fx_concrete_args, fx_rows  # noqa: E402

# the example sizes fxlens names B and T (server/fxlens/worker/construction/build.py: BATCH, SEQUENCE)
FREE_SIZES = {"B": 2, "T": 8}


def import_file(model: ModelFile):
    for folder in reversed(model.sys_path):
        path = str((model.root / folder).resolve())
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module(model.module)


def namespace(module) -> dict:
    return {**vars(module), "torch": torch, "nn": torch.nn, "envs": envs}


def error_text(error: BaseException) -> str:
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first}"[:300]


def truth(model: ModelFile, module) -> dict:
    """Per class: does raw torch fx-trace and export the reference construction, and with how many nodes."""
    out = {}
    for name, example in model.classes.items():
        entry: dict = {}
        try:
            torch.manual_seed(0)
            scope = namespace(module)
            instance = eval(example.build, scope)
            args, kwargs = eval(example.args, scope), eval(example.kwargs, scope)
        except Exception as error:  # noqa: BLE001 - a wrong reference entry, reported as such
            out[name] = {"reference_error": error_text(error)}
            continue
        try:
            # symbolic_trace as it is; the defaults frozen only where that fails (as fxlens does)
            concrete = fx_concrete_args(instance, args, kwargs)
            entry["fx_nodes"] = len(torch.fx.symbolic_trace(instance, concrete_args=concrete).graph.nodes)
            entry["fx_ok"] = True
        except Exception as error:  # noqa: BLE001 - the answer we came for
            entry.update(fx_ok=False, fx_error=error_text(error))
        try:
            entry["export_nodes"] = len(torch.export.export(instance, args, kwargs, strict=False).graph.nodes)
            entry["export_ok"] = True
        except Exception as error:  # noqa: BLE001
            entry.update(export_ok=False, export_error=error_text(error))
        out[name] = entry
    return out


def _spec_tensor(spec: dict, device: str):
    if spec.get("shape") is None:
        return ast.literal_eval(spec["value"]) if spec.get("value") is not None else None
    shape = [size if isinstance(size, int) else eval(str(size), {}, dict(FREE_SIZES)) for size in spec["shape"]]
    return torch.zeros(shape, dtype=getattr(torch, spec["dtype"]), device=device)


def _bind(instance: torch.nn.Module, values: list, names: list) -> tuple[tuple, dict]:
    """Positional while the forward's parameters are positional, keywords after (as a user calls it)."""
    parameters = inspect.signature(instance.forward).parameters
    args, kwargs = [], {}
    for value, name in zip(values, names):
        param = parameters.get(name)
        if not kwargs and param is not None and param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            args.append(value)
        else:
            kwargs[name] = value
    return tuple(args), kwargs


def _called_with_specs(instance: torch.nn.Module, specs: list, device: str) -> tuple[torch.nn.Module, tuple, dict]:
    with torch.device(device):
        values = [_spec_tensor(spec, device) for spec in specs]
    return (instance, *_bind(instance, values, [spec["name"] for spec in specs]))


def split_directive(text: str):
    expr = ast.parse(text, mode="eval").body
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
        return expr.func, expr.args, expr.keywords
    return expr, None, []


def build(recipe: dict, module, device: str) -> tuple[torch.nn.Module, tuple, dict]:
    """The instance and inputs a recipe describes (see reach.py: `recipe`), on `device`."""
    scope = namespace(module)
    evaluate = lambda node: eval(compile(ast.Expression(node), "<directive>", "eval"), scope)  # noqa: E731
    with torch.device(device):
        if recipe["kind"] == "directive":
            ctor, arg_nodes, keywords = split_directive(recipe["text"])
            instance = evaluate(ctor)
            if arg_nodes is None:
                raise ValueError("the directive gives no inputs")
            return instance, tuple(evaluate(a) for a in arg_nodes), {k.arg: evaluate(k.value) for k in keywords}
        if recipe["kind"] == "expr":
            return _called_with_specs(eval(recipe["build"], scope), recipe["inputs"], device)
        parent, args, kwargs = build(recipe["parent"], module, device)
        child = parent.get_submodule(recipe["path"])
        if recipe.get("inputs") is not None:  # the parent's run gave it nothing: inferred inputs
            return _called_with_specs(child, recipe["inputs"], device)
        seen = first_call_of(parent, recipe["path"], args, kwargs)
        if seen is None and recipe.get("specs"):
            # the parent never called it here (a router sent it no tokens with these weights): the
            # shapes the report lists for what it received
            return _called_with_specs(child, recipe["specs"], device)
        if seen is None:
            raise RuntimeError(f"running the parent never called `{recipe['path']}`")
        return (child, *seen)


def _positional(instance: torch.nn.Module, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return args
    bound = inspect.signature(instance.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def rebuild(job: dict, module, path: str) -> dict:
    """Raw torch's rows for the levels fxlens traced: on meta as fxlens does, on the CPU (real values) if
    meta cannot; last, the fx graph with the shapes meta propagation got to."""
    out: dict = {}
    for level in job["levels"]:
        errors = []
        for device, partial in (("meta", False), ("cpu", False), ("meta", True)):
            if partial and level != "fx":
                continue
            try:
                torch.manual_seed(0)
                instance, args, kwargs = build(job["recipe"], module, device)
                positional = _positional(instance, args, kwargs)
                if level == "fx":
                    rows = fx_rows(instance, positional, path, partial, fx_concrete_args(instance, args, kwargs))
                else:
                    rows = export_rows(torch.export.export(instance, args, kwargs, strict=False), path)
                out[level] = {"rows": [list(r) for r in rows], "device": device, "partial": partial,
                              "inputs": [list(x.shape) if isinstance(x, torch.Tensor) else None for x in positional]}
                break
            except Exception as error:  # noqa: BLE001 - recorded: the check says it could not compare
                errors.append(f"{device}: {error_text(error)}")
        else:
            out[level] = {"error": "; ".join(errors)}
    return out


def time_all() -> dict:
    """fx + export of every reference class of the corpus, one process (the benchmark's baseline)."""
    start = time.perf_counter()
    traced = 0
    for model in CORPUS:
        before = set(sys.modules)
        saved_path = list(sys.path)
        module = import_file(model)
        results = truth(model, module)
        traced += sum(bool(r.get("fx_ok")) + bool(r.get("export_ok")) for r in results.values())
        root = str(model.root.resolve())
        for name in set(sys.modules) - before:  # repositories reuse top-level names (`model`); torch's stay
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(root):
                del sys.modules[name]
        sys.path[:] = saved_path
    return {"seconds": time.perf_counter() - start, "traced_levels": traced}


def answer(request: dict) -> dict:
    if request.get("mode") == "time":
        return time_all()
    files = {m.key: m for m in CORPUS}
    out: dict = {"truth": {}, "rebuilds": [], "import_errors": {}}
    for key in request["files"]:
        model = files[key]
        try:
            module = import_file(model)
        except Exception as error:  # noqa: BLE001 - the corpus itself is broken: say so
            out["import_errors"][key] = error_text(error) + "\n" + traceback.format_exc(limit=-3)
            continue
        if request.get("truth", True):
            out["truth"][key] = truth(model, module)
        path = str(model.file.resolve())
        for job in request.get("jobs", []):
            if job["file"] == key:
                out["rebuilds"].append({"file": key, "class": job["class"], **rebuild(job, module, path)})
    return out


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

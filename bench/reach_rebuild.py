"""Raw torch on what an fxlens report says it built (bench/reach_common.py: `recipe`): rebuild it from the
directive, the constructor call and inferred inputs, or the instance a parent built with the inputs that
parent gave it, and list raw torch's nodes at each level (bench/torch_nodes.py) for the node-by-node
agreement; and `reference_truth`, raw torch on a corpus's reference constructions. Shared by bench/reach_torch.py,
bench/reach_research_torch.py and bench/reach_packages_torch.py; `scope` is the namespace
the recipe's expressions are evaluated in (the file's module plus `torch`)."""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import os
import sys
from collections.abc import Callable

import torch
from torch_nodes import cpu_export, export_rows, first_call_of, fx_concrete_args, fx_rows

# the example sizes fxlens names B and T (server/fxlens/worker/build.py: BATCH, SEQUENCE)
FREE_SIZES = {"B": 2, "T": 8}
# fxlens gives no model over this many parameter elements real CPU weights (worker/failures/limits.py);
# a rebuild on the CPU of a 7B-default model would take the whole memory and the process with it
MAX_CPU_ELEMENTS = 50_000_000


def error_text(error: BaseException) -> str:
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first}"[:300]


def _spec_tensor(spec: dict, device: str):
    if spec.get("parts") is not None:  # a tuple of tensors, element by element
        return tuple(_spec_tensor(part, device) for part in spec["parts"])
    if spec.get("shape") is None:
        return ast.literal_eval(spec["value"]) if spec.get("value") is not None else None
    shape = [size if isinstance(size, int) else eval(str(size), {}, dict(FREE_SIZES)) for size in spec["shape"]]
    return torch.zeros(shape, dtype=getattr(torch, spec["dtype"]), device=device)


def _bind(values: list, specs: list) -> tuple[tuple, dict]:
    """As fxlens called it: by position the inputs it passed by position, by name (in its order) the rest."""
    args = tuple(value for value, spec in zip(values, specs) if not spec.get("keyword"))
    return args, {spec["name"]: value for value, spec in zip(values, specs) if spec.get("keyword")}


def _called_with_specs(instance: torch.nn.Module, specs: list, device: str) -> tuple[torch.nn.Module, tuple, dict]:
    with torch.device(device):
        values = [_spec_tensor(spec, device) for spec in specs]
    return (instance, *_bind(values, specs))


def split_directive(text: str):
    expr = ast.parse(text, mode="eval").body
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
        return expr.func, expr.args, expr.keywords
    return expr, None, []


def build(recipe: dict, scope: dict, device: str) -> tuple[torch.nn.Module, tuple, dict]:
    """The instance and inputs a recipe describes (see reach.py: `recipe`), on `device`."""
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
        parent, args, kwargs = build(recipe["parent"], scope, device)
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


def _root(recipe: dict) -> dict:
    """The recipe of the module built first: a child's parent's, up to the top."""
    return _root(recipe["parent"]) if recipe["kind"] == "parent" else recipe


def elements_on_meta(recipe: dict, scope: dict) -> int:
    """The parameter and buffer elements of the top module the recipe builds, built on meta; 0 when the
    meta device cannot build it (the CPU rebuild is then tried, as before)."""
    try:
        module = build(_root(recipe), scope, "meta")[0]
    except Exception:  # noqa: BLE001 - unknown size: not a reason to skip the CPU
        return 0
    # a lazy layer's parameters have no size before the first forward: they count for nothing here
    tensors = [*module.parameters(), *module.buffers()]
    return sum(t.numel() for t in tensors if not isinstance(t, torch.nn.parameter.UninitializedTensorMixin))


def _materialise_lazy(instance: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """A module with lazy layers (`nn.LazyLinear`) gets its shapes from one forward, as its user's first call
    gives them; export cannot trace it before."""
    lazy = [*instance.parameters(), *instance.buffers()]
    if (args or kwargs) and any(isinstance(t, torch.nn.parameter.UninitializedTensorMixin) for t in lazy):
        with torch.no_grad():
            instance(*args, **kwargs)


def rebuild(job: dict, scope: dict, path: str) -> dict:
    """Raw torch's rows for the levels fxlens traced: on meta as fxlens does, on the CPU (real values) if
    meta cannot and the model is within fxlens's CPU limit; last, the fx graph with the shapes meta
    propagation got to."""
    out: dict = {}
    elements = None
    for level in job["levels"]:
        errors = []
        for device, partial in (("meta", False), ("cpu", False), ("meta", True)):
            if partial and level != "fx":
                continue
            if device == "cpu":
                elements = elements_on_meta(job["recipe"], scope) if elements is None else elements
                if elements > MAX_CPU_ELEMENTS:
                    errors.append(
                        f"cpu: not tried, {elements / 1e6:.0f} M parameter elements "
                        f"(over the {MAX_CPU_ELEMENTS // 1_000_000} M fxlens gives real CPU weights)"
                    )
                    continue
            try:
                torch.manual_seed(0)
                instance, args, kwargs = build(job["recipe"], scope, device)
                _materialise_lazy(instance, args, kwargs)
                positional = _positional(instance, args, kwargs)
                if level == "fx":
                    rows = fx_rows(instance, positional, path, partial, fx_concrete_args(instance, args, kwargs))
                else:
                    rows = export_rows(cpu_export(instance, args, kwargs), path)
                out[level] = {
                    "rows": [list(r) for r in rows],
                    "device": device,
                    "partial": partial,
                    "inputs": [list(x.shape) if isinstance(x, torch.Tensor) else None for x in positional],
                }
                break
            except Exception as error:  # noqa: BLE001 - recorded: the check says it could not compare
                errors.append(f"{device}: {error_text(error)}")
        else:
            out[level] = {"error": "; ".join(errors)}
    return out


def reference_truth(classes: dict, scope_for: Callable[[], dict]) -> dict:
    """Per class of a corpus's reference constructions (name -> its build, args and kwargs expressions): does
    raw torch fx-trace and export it on the CPU (non-strict), and with how many nodes. `scope_for()` gives the
    namespace each class's expressions are evaluated in."""
    out = {}
    for name, example in classes.items():
        entry: dict = {}
        try:
            torch.manual_seed(0)
            scope = scope_for()
            instance = eval(example.build, scope)
            args, kwargs = eval(example.args, scope), eval(example.kwargs, scope)
        except Exception as error:  # noqa: BLE001 - a wrong reference entry, reported as such
            out[name] = {"reference_error": error_text(error)}
            continue
        try:
            # the parameters the example leaves to their defaults are concrete, as HF's own tracer does
            concrete = fx_concrete_args(instance, args, kwargs)  # symbolic_trace as it is; frozen only where that fails
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


def serve(answer: Callable[[dict], dict]) -> None:
    """Read one JSON request on stdin, write `answer(request)` as JSON on stdout: a raw-torch helper
    process's whole protocol. What the models print goes to stderr (it must not corrupt the answer)."""
    request = json.load(sys.stdin)
    stdout = os.fdopen(os.dup(1), "w")
    with contextlib.redirect_stdout(sys.stderr):
        os.dup2(2, 1)
        result = answer(request)
    stdout.write(json.dumps(result))
    stdout.flush()

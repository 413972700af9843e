"""The independent check of one fix `python -m bench fixes` found proven: raw torch only, no fxlens code.

    python bench/fixes_check.py JOB_JSON

JOB_JSON: {"original": path, "fixed": path, "class": name, "levels": ["fx", ...], "inputs": [[4, 32], ...],
"may_change": [the arguments the fix's proof says the caller no longer sees changed]}.
Both files are imported as modules of their own; the original class is built with seed 7 and the fixed class
gets its state_dict (no class swapping, unlike the proof). Then: at each level of the finding, the fixed
module traces (fx: symbolic_trace; aten: torch.export; dynamo: fewer graph breaks than the original's, every
break reason dynamo records counted, and none left means torch.compile(fullgraph=True) captures it), and on
five seeds the proof never used (100..104), each input as drawn, negated and times ten, in eval and in train
mode, both modules give equal outputs (torch.allclose at rtol 1e-5, atol 1e-6, same shape and dtype), and their
state after every call is equal. Prints one JSON object: {"ok": bool, "why": str}.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import sys
from typing import Any

import torch
import torch._dynamo
import torch.fx


def _load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _leaves(value: Any) -> list[Any]:
    return list(torch.utils._pytree.tree_leaves(value))


def _same(a: Any, b: Any) -> str:
    left, right = _leaves(a), _leaves(b)
    if len(left) != len(right):
        return "a different number of outputs"
    for x, y in zip(left, right):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return "a tensor where the original returns a number, or the reverse"
        if not isinstance(x, torch.Tensor):
            if x != y:
                return f"{x!r} vs {y!r}"
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"shape/dtype {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}"
        if not torch.allclose(x.double(), y.double(), rtol=1e-5, atol=1e-6, equal_nan=True):
            return f"values differ by {float((x.double() - y.double()).abs().max()):.3g}"
    return ""


def _state(module: torch.nn.Module) -> dict[str, Any]:
    state: dict[str, Any] = dict(module.state_dict())
    for name, sub in module.named_modules():
        for key, value in vars(sub).items():
            if isinstance(value, (int, float, str, bool, torch.Tensor)) and not key.startswith("_"):
                state[f"{name}.{key}"] = value
    return state


def _state_differs(a: torch.nn.Module, b: torch.nn.Module) -> str:
    left, right = _state(a), _state(b)
    for key in sorted(set(left) | set(right)):
        x, y = left.get(key), right.get(key)
        same = torch.equal(x, y) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) else x == y
        if not same:
            return key
    return ""


def _breaks(module: torch.nn.Module, inputs: tuple) -> int:
    """The graph breaks torch.compile meets in one call: every break reason dynamo records (explain's
    graph_break_count is graphs - 1, which misses a break after which no op runs: `print(...)` before `return`)."""
    from torch._dynamo.utils import graph_break_reasons

    torch._dynamo.reset()
    torch.compile(module, backend="eager")(*inputs)
    return len(graph_break_reasons)


def _whole_graph(module: torch.nn.Module, inputs: tuple) -> str:
    """ "" when torch.compile(fullgraph=True) captures the module whole, else its first break."""
    torch._dynamo.reset()
    try:
        torch.compile(module, backend="eager", fullgraph=True)(*inputs)
    except torch._dynamo.exc.Unsupported as error:
        return str(error).splitlines()[0][:200]
    return ""


def _fx(module: torch.nn.Module, passed: int) -> None:
    """symbolic_trace as fxlens's fx level runs it (its note says so): plain, and where that fails, with the
    parameters the call leaves to a constant default (None, a bool, a number, a string) as `concrete_args`."""
    try:
        torch.fx.symbolic_trace(module)
        return
    except Exception:
        unpassed = list(inspect.signature(module.forward).parameters.values())[passed:]
        concrete = {p.name: p.default for p in unpassed if type(p.default) in (type(None), bool, int, float, str)}
        if not concrete:
            raise
    torch.fx.symbolic_trace(module, concrete_args=concrete)


def _levels(job: dict, original: torch.nn.Module, fixed: torch.nn.Module, inputs: tuple) -> str:
    for level in job["levels"]:
        try:
            if level == "fx":
                _fx(fixed, len(inputs))
            elif level == "aten":
                torch.export.export(fixed, inputs)
            elif level == "dynamo":
                try:
                    before: int | None = _breaks(original, inputs)
                except Exception:  # noqa: BLE001  torch.compile fails on the original: the fixed one must compile
                    before = None
                after = _breaks(fixed, inputs)
                if before is not None and after >= before:
                    return f"dynamo: {after} graph breaks, the original {before}"
                broken = _whole_graph(fixed, inputs) if after == 0 else ""
                if broken:
                    return f"dynamo: no break counted, but fullgraph=True fails: {broken}"
        except Exception as error:  # noqa: BLE001  the fixed module failing its level is the verdict
            return f"{level}: {type(error).__name__}: {str(error).splitlines()[0][:200]}"
    return ""


def check(job: dict) -> dict:
    original_module = _load(job["original"], "bench_fix_original")
    fixed_module = _load(job["fixed"], "bench_fix_fixed")
    torch.manual_seed(7)
    original = getattr(original_module, job["class"])()
    fixed = getattr(fixed_module, job["class"])()
    fixed.load_state_dict(original.state_dict())
    shapes = [tuple(shape) for shape in job["inputs"]]
    names = list(inspect.signature(original.forward).parameters)  # the inputs' names, as the proof says them
    first = tuple(torch.randn(shape, generator=torch.Generator().manual_seed(100)) for shape in shapes)
    why = _levels(job, original, fixed, first)
    if why:
        return {"ok": False, "why": why}
    compared = 0
    for mode in ("eval", "train"):
        original.train(mode == "train")
        fixed.train(mode == "train")
        for seed in range(100, 105):
            drawn = tuple(torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for shape in shapes)
            for inputs in (drawn, tuple(-x for x in drawn), tuple(10 * x for x in drawn)):
                # each module on its own copy: an input updated in place is state the caller sees, compared below
                given, inputs = tuple(x.clone() for x in inputs), tuple(x.clone() for x in inputs)
                torch.manual_seed(seed)
                try:
                    with torch.no_grad():
                        expected = original(*given)
                except Exception:  # noqa: BLE001  the original refuses this input (an assert): so must the fix
                    torch.manual_seed(seed)
                    try:
                        fixed(*inputs)
                    except Exception:  # noqa: BLE001
                        continue
                    return {"ok": False, "why": f"the fix accepts an input the original refuses ({mode}, seed {seed})"}
                torch.manual_seed(seed)
                with torch.no_grad():
                    got = fixed(*inputs)
                differs = _same(expected, got)
                if differs:
                    return {"ok": False, "why": f"outputs ({mode}, seed {seed}): {differs}"}
                changed = _state_differs(original, fixed)
                if changed:
                    return {"ok": False, "why": f"state `{changed}` differs after a call ({mode}, seed {seed})"}
                for name, before, after in zip(names, given, inputs):
                    if name not in job.get("may_change", []) and not torch.equal(before, after):
                        return {"ok": False, "why": f"the caller's `{name}` differs after a call ({mode}, seed {seed})"}
                compared += 1
    return {"ok": True, "why": "", "compared": compared}


if __name__ == "__main__":
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    out, sys.stdout = sys.stdout, sys.stderr  # (what the modules print is not the result)
    result = check(json.loads(sys.argv[1]))
    out.write(json.dumps(result) + "\n")

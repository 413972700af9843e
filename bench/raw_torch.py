"""The baseline: plain torch doing the traces fxlens does, on the same text, with no fxlens code.

    python bench/raw_torch.py serve             # warm: JSON lines on stdin, one answer per line
    python bench/raw_torch.py once MODEL_KEY    # cold: import torch, trace once, exit (time it outside)
    python bench/raw_torch.py export MODEL_KEY dynamic|static   # one torch.export; seconds + peak RSS

"Same work" for a class = what gives the data fxlens reports for it: torch.fx.symbolic_trace +
ShapeProp on inputs with symbolic batch/sequence sizes (the fx level with shapes like (B, T, 768))
+ torch.export non-strict with those sizes dynamic (the aten level). Children of the file's top
model are traced as the instances it builds, with the inputs they receive, as fxlens does.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
import torch.fx
from specs import MODELS, ModelSpec
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.fx.passes.shape_prop import ShapeProp


def load(path: str, text: str) -> types.ModuleType:
    """The text compiled under the file's path, as fxlens loads a buffer (no import machinery)."""
    module = types.ModuleType(Path(path).stem)
    module.__file__ = path
    sys.modules[module.__name__] = module
    exec(compile(text, path, "exec"), module.__dict__)
    return module


def module_classes(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, obj in vars(module).items()
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj.__module__ == module.__name__
    }


def examples(spec: ModelSpec, module: types.ModuleType) -> dict[str, tuple[torch.nn.Module, tuple, int]]:
    """Per class of the file: (instance, positional inputs, number of leading free dims)."""
    with torch.device("meta"):
        top = eval(spec.build, vars(module))
        inputs = eval(spec.inputs, {**vars(module), "torch": torch})
    found = {type(top).__name__: (top, inputs, spec.free_dims)}
    wanted = module_classes(module)
    hooks = []
    for sub in top.modules():
        name = type(sub).__name__
        if name in wanted and name not in found:

            def record(mod, args, name=name):
                found.setdefault(name, (mod, tuple(args), spec.free_dims))

            hooks.append(sub.register_forward_pre_hook(record))
    try:
        with torch.no_grad():
            top(*inputs)
    finally:
        for hook in hooks:
            hook.remove()
    return found


def _dynamic(inputs: tuple, free: int) -> tuple:
    auto = torch.export.Dim.AUTO
    return tuple(
        {d: auto for d in range(min(free, x.dim()))} if isinstance(x, torch.Tensor) and free else None for x in inputs
    )


def same_work(instance: torch.nn.Module, inputs: tuple, free: int) -> int:
    """fx graph + symbolic shapes + dynamic export of one instance; returns the node count."""
    gm = torch.fx.symbolic_trace(instance)
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    fakes = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            sizes = [DimDynamic.DYNAMIC if d < free else DimDynamic.STATIC for d in range(x.dim())]
            x = mode.from_tensor(x, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes))
        fakes.append(x)
    ShapeProp(gm, fake_mode=mode).propagate(*fakes)
    ep = torch.export.export(instance, inputs, dynamic_shapes=_dynamic(inputs, free) if free else None, strict=False)
    return len(gm.graph.nodes) + len(ep.graph.nodes)


def trace_text(spec: ModelSpec, path: str, text: str, classes: list[str] | None) -> dict:
    """Load the text, build on meta, do the same work for every class asked for (None: all)."""
    start = time.perf_counter()
    module = load(path, text)
    nodes = 0
    for name, (instance, inputs, free) in examples(spec, module).items():
        if classes is None or name in classes:
            nodes += same_work(instance, inputs, free)
    return {"seconds": time.perf_counter() - start, "nodes": nodes}


def export_once(spec: ModelSpec, dynamic: bool) -> dict:
    module = load(str(spec.source), spec.text())
    with torch.device("meta"):
        top = eval(spec.build, vars(module))
        inputs = eval(spec.inputs, {**vars(module), "torch": torch})
    start = time.perf_counter()
    ep = torch.export.export(
        top, inputs, dynamic_shapes=_dynamic(inputs, spec.free_dims) if dynamic else None, strict=False
    )
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "nodes": len(ep.graph.nodes),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _warm() -> None:
    """What fxlens's worker does at start: pay torch.export's first-call cost once."""
    with torch.device("meta"):
        probe = torch.nn.Linear(2, 2)
    torch.fx.symbolic_trace(probe)
    torch.export.export(probe, (torch.zeros(2, 2, device="meta"),), strict=False)


def main() -> None:
    mode = sys.argv[1]
    if mode == "once":
        spec = MODELS[sys.argv[2]]
        print(json.dumps(trace_text(spec, str(spec.source), spec.text(), None)))
    elif mode == "export":
        _warm()
        print(json.dumps(export_once(MODELS[sys.argv[2]], sys.argv[3] == "dynamic")))
    elif mode == "serve":
        _warm()
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            spec = MODELS[request["model"]]
            print(json.dumps(trace_text(spec, request["path"], request["text"], request.get("classes"))), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()

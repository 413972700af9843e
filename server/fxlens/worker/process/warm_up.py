"""Warm-up: warm a standby child's torch caches with the last export's graph, before its request comes.

A forked child starts with the caches of the warm worker only. torch.export's FakeTensor dispatch cache
is keyed by operator and argument shapes, so a child that exports the class just edited pays again for
every kernel it ran last time: on a small file that is a quarter of the export. The worker never runs
user code, so it cannot export the user's class itself; what it can do is keep the *aten graph* of the
last export — plain data, operators of torch's own `aten` namespace and the shapes of their tensors — and
have the next standby export that graph as the aten level exports (on fake CPU tensors made from meta ones)
while the user is still typing. The ops meet the same inputs, the cache fills
with the same keys, and the real export finds them there.

A recipe that is wrong, hostile or stale costs nothing but cache misses: every cache entry is made by
torch in the standby, from its own kernels, and the standby is thrown away after one trace.

Then the standby traces a small model of torch's own layers through fxlens's own steps. A forked process
pays a page copy the first time it writes to a page it shares with the worker, and CPython writes to
every object it touches (reference counts): a first trace in a fresh fork runs its fx level at a third
of the speed of a second one. The probe takes those copies while nobody waits.
"""

from __future__ import annotations

import linecache
import operator
import select
import sys
import textwrap
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import torch

from fxlens.worker.levels.values import dtype_name

# bigger graphs repeat their layers: the first export of a block already fills the cache for the others
MAX_NODES = 3000

_SCALARS = (bool, int, float, str, type(None))
_DEVICES = ("meta", "cpu")  # (an export's tensors are fake CPU ones, or meta)

PROBE_PATH = "/fxlens-probe/fxlens_probe.py"  # never read: the text is given
PROBE = textwrap.dedent("""
    import torch
    from torch import nn


    class ProbeBlock(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(width, width)
            self.norm = nn.LayerNorm(width)

        def forward(self, x):
            return torch.relu(self.norm(self.fc(x))) + x


    # fxlens: Probe()(torch.randn(2, 4))
    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([ProbeBlock(4) for _ in range(2)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x.sum()
""")


class NoRecipe(Exception):
    pass


def _tensor_spec(value: Any) -> dict:
    if not isinstance(value, torch.Tensor) or value.device.type not in _DEVICES or value.layout != torch.strided:
        raise NoRecipe("not a strided tensor on meta or the CPU")
    return {
        "shape": [int(s) for s in value.shape],
        "stride": [int(s) for s in value.stride()],
        "dtype": dtype_name(value.dtype),
        "requires_grad": bool(value.requires_grad),
    }


def _encode(value: Any) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(item) for item in value]}
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, torch.device) and value.type in _DEVICES:
        return {"device": value.type}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, torch.layout) and value == torch.strided:
        return {"layout": "strided"}
    raise NoRecipe(f"argument of type {type(value).__name__}")


def _target(node: torch.fx.Node) -> str:
    if node.target is operator.getitem:
        return "getitem"
    if isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "aten":
        return f"{node.target._opname}.{node.target._overloadname}"
    raise NoRecipe(f"target {node.target}")


def recipe(ep: Any, seconds: float) -> dict | None:
    """The exported program's graph as plain data, or None when it has something a warm-up cannot
    rebuild (another namespace, a higher-order op, a tensor not on meta) or is too big to be worth it.
    Never raises: a warm-up is only a speed-up, and must not cost the trace its aten level."""
    try:
        return _recipe(ep, seconds)
    except Exception:  # noqa: BLE001  NoRecipe, or a torch whose ExportedProgram differs
        return None


def _recipe(ep: Any, seconds: float) -> dict | None:
    graph = ep.graph
    if len(graph.nodes) > MAX_NODES:
        return None
    kinds = {spec.arg.name: spec.kind.name for spec in ep.graph_signature.input_specs if hasattr(spec.arg, "name")}
    placeholders, nodes = [], []
    for node in graph.nodes:
        if node.op == "placeholder":
            placeholders.append(
                {"name": node.name, "kind": kinds.get(node.name, "USER_INPUT"), **_tensor_spec(node.meta.get("val"))}
            )
        elif node.op == "call_function":
            nodes.append(
                {
                    "name": node.name,
                    "target": _target(node),
                    "args": _encode(node.args),
                    "kwargs": {key: _encode(value) for key, value in node.kwargs.items()},
                }
            )
        elif node.op == "output":
            nodes.append({"name": node.name, "target": "output", "args": _encode(node.args), "kwargs": {}})
        else:
            raise NoRecipe(f"{node.op} node")
    return {"placeholders": placeholders, "nodes": nodes, "seconds": seconds}


# -- in the standby ------------------------------------------------------------------------------------


def _torch_constant(name: Any, kind: type) -> Any:
    value = getattr(torch, name) if isinstance(name, str) else None
    if not isinstance(value, kind):
        raise NoRecipe(f"{name!r} is not a {kind.__name__}")
    return value


def _meta_tensor(spec: dict) -> torch.Tensor:
    return torch.empty_strided(
        spec["shape"], spec["stride"], dtype=_torch_constant(spec["dtype"], torch.dtype), device="meta"
    )


def _decode(value: Any, env: dict[str, torch.fx.Node]) -> Any:
    if isinstance(value, list):
        return [_decode(item, env) for item in value]
    if not isinstance(value, dict):
        return value
    if "node" in value:
        return env[value["node"]]
    if "tuple" in value:
        return tuple(_decode(item, env) for item in value["tuple"])
    if "dtype" in value:
        return _torch_constant(value["dtype"], torch.dtype)
    if "device" in value and value["device"] in _DEVICES:
        return torch.device(value["device"])
    if "memory_format" in value:
        return _torch_constant(value["memory_format"], torch.memory_format)
    if "layout" in value:
        return torch.strided
    raise NoRecipe(f"unknown argument {value!r}")


def _program(recipe: dict) -> tuple[torch.fx.GraphModule, tuple]:
    """The recipe as a module whose forward runs the same aten ops on the same kinds of inputs:
    parameters and buffers as attributes (so they are fakified as the original's were), user inputs
    as arguments."""
    root = torch.nn.Module()
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    inputs = []
    for index, spec in enumerate(recipe["placeholders"]):
        if spec["kind"] == "USER_INPUT":
            env[spec["name"]] = graph.placeholder(spec["name"])
            inputs.append(_meta_tensor(spec))
            continue
        attribute = f"a{index}"
        tensor = _meta_tensor(spec)
        if spec["kind"] == "PARAMETER":
            root.register_parameter(attribute, torch.nn.Parameter(tensor, requires_grad=spec["requires_grad"]))
        else:
            root.register_buffer(attribute, tensor)
        env[spec["name"]] = graph.get_attr(attribute)
    for spec in recipe["nodes"]:
        args = _decode(spec["args"], env)
        kwargs = {key: _decode(value, env) for key, value in spec["kwargs"].items()}
        if spec["target"] == "output":
            graph.output(args[0])
            continue
        if spec["target"] == "getitem":
            target = operator.getitem
        else:
            name, overload = spec["target"].rsplit(".", 1)
            target = getattr(getattr(torch.ops.aten, name), overload)
        env[spec["name"]] = graph.call_function(target, tuple(args), kwargs)
    return torch.fx.GraphModule(root, graph), tuple(inputs)


def _trace_probe() -> None:
    """fxlens's whole analysis of PROBE, leaving nothing behind that a trace could see."""
    from fxlens.messages import TraceRequest
    from fxlens.worker.analysis.analyse import Analysis
    from fxlens.worker.load import imports
    from fxlens.worker.load.loader import module_name_for

    name, path = module_name_for(PROBE_PATH), list(sys.path)
    try:
        Analysis(TraceRequest(PROBE_PATH, text=PROBE, levels=["fx", "aten"])).run(lambda event: None)
    finally:
        sys.path[:] = path
        imports.uninstall()  # the probe's import hook
        sys.modules.pop(name, None)
        linecache.cache.pop(PROBE_PATH, None)


def _export(recipe: dict) -> None:
    from fxlens.worker.levels import devices
    from fxlens.worker.levels.aten import export, without_stack_traces  # (trace_aten imports this module)

    module, inputs = _program(recipe)
    with without_stack_traces():  # this export only warms caches
        devices.run(lambda m, call: export(m, call[0], None, call[1]), module, (inputs, {}), "fake", kinds=("fake",))


def _warms(step: Callable[[], None]) -> bool:
    try:
        step()
    except Exception:  # noqa: BLE001  a graph torch no longer accepts warms nothing, harms nothing
        return False
    return True


def warm_up(recipes: Iterable[dict], request_fd: int) -> int:
    """Export each recipe's graph, then trace the probe, until a request is waiting on `request_fd`
    (checked between steps); how many recipes were exported. Failures are skipped: a warm-up only warms."""

    def waiting() -> bool:
        return bool(select.select([request_fd], [], [], 0)[0])

    exported = 0
    for item in recipes:
        if waiting():
            return exported
        # (a recipe comes from the process that ran user code: its size is checked again here)
        if len(item["nodes"]) + len(item["placeholders"]) <= MAX_NODES:
            exported += _warms(partial(_export, item))
    if not waiting():
        _warms(_trace_probe)
    return exported

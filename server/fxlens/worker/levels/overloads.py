"""What an ATen graph's nodes are beyond their names: each overload's schema and its siblings (one table
per level, not per node: a 70B-shaped model has ~5,000 aten nodes and a few dozen distinct targets), and
each node's forward FLOPs as torch.utils.flop_counter counts them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from fxlens.report import Node
from fxlens.worker.levels.fx import target_text


def schemas(graph: torch.fx.Graph) -> dict[str, dict]:
    """{target text: {"schema": the chosen overload's schema, "overloads": its packet's overload names}}."""
    table: dict[str, dict] = {}
    for node in graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        key = target_text(node)
        if key not in table:
            table[key] = {"schema": str(target._schema), "overloads": list(target.overloadpacket.overloads())}
    return table


def _value(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


def _on_meta(value: Any) -> Any:
    """A node's fake value as a meta tensor of the same layout (running an op on it allocates nothing)."""
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return value


def _decomposes(target: torch._ops.OpOverload) -> bool:
    """FlopCounterMode counts such an op by what it decomposes into (`aten.linear` counts as its addmm)."""
    return (
        torch._C.DispatchKey.CompositeImplicitAutograd in target.py_kernels
        or torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd")
    )


def _symbolic(values: Any) -> bool:
    leaves, _ = tree_flatten(values)
    return any(
        isinstance(leaf, torch.SymInt)
        or (isinstance(leaf, torch.Tensor) and any(isinstance(size, torch.SymInt) for size in leaf.shape))
        for leaf in leaves
    )


def _key(target: Any, args: Any, kwargs: Any) -> tuple | None:
    """What an op's count depends on: its overload and its arguments' layouts (a model's layers repeat
    the same calls: GPT-2's 12 blocks are 12 times one block's counts). None: not hashable as is."""
    leaves, spec = tree_flatten((args, kwargs))
    parts = tuple(
        (tuple(leaf.shape), leaf.stride(), leaf.dtype) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves
    )
    try:
        hash(parts)
    except TypeError:
        return None
    return (target, str(spec), parts)


def _linear_flops(x: Any, weight: Any, bias: Any = None, *, out_val: Any = None) -> int | None:
    """`aten.linear` as FlopCounterMode counts it through its decomposition: one (add)mm of the input
    flattened to 2-D (its leading dimensions folded into the rows) by the transposed weight. None: a
    weight that is not 2-D (its decomposition is no mm)."""
    if weight.dim() != 2 or x.dim() < 1:
        return None
    rows = math.prod(x.shape[:-1])
    return int(
        flop_registry[torch.ops.aten.mm](
            torch.Size([rows, x.shape[-1]]), torch.Size([weight.shape[1], weight.shape[0]])
        )
    )


# composite ops counted from their sizes as their decomposition would be: running one on meta under
# FlopCounterMode takes ~0.8 ms, and aten.linear is in nearly every class and so in nearly every trace
_COMPOSITE_FORMULAS: dict[Any, Callable[..., int | None]] = {torch.ops.aten.linear: _linear_flops}


def node_flops(node: torch.fx.Node, counter: FlopCounterMode, cache: dict | None = None) -> int | None:
    """The node's forward FLOPs, as FlopCounterMode would count its op at this size; None when the
    sizes are symbolic (an unbacked `.item()` size) or the op cannot run on meta tensors."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    args, kwargs, out = tree_map(_value, (node.args, node.kwargs, node.meta.get("val")))
    if _symbolic((args, kwargs, out)):
        return None
    formula = flop_registry.get(target.overloadpacket)
    if formula is not None:  # a counted op: its formula reads sizes only, nothing runs
        return int(formula(*args, **kwargs, out_val=out))
    composite = _COMPOSITE_FORMULAS.get(target.overloadpacket)
    counted = composite(*args, **kwargs, out_val=out) if composite is not None else None
    if counted is not None:
        return counted
    if not _decomposes(target):
        return 0  # FlopCounterMode counts only the ops of its registry
    key = _key(target, args, kwargs) if cache is not None else None
    if cache is not None and key is not None and key in cache:
        return cache[key]
    count = _decomposed_count(target, args, kwargs, counter)
    if cache is not None and key is not None:
        cache[key] = count
    return count


def _decomposed_count(target: torch._ops.OpOverload, args: Any, kwargs: Any, counter: FlopCounterMode) -> int | None:
    """Run on meta tensors under FlopCounterMode: it counts what the op decomposes into."""
    try:
        with counter:  # entering clears its counts
            target(*tree_map(_on_meta, args), **tree_map(_on_meta, kwargs))
    except Exception:  # noqa: BLE001  an op that cannot run on meta tensors: not counted
        return None
    return counter.get_total_flops()


def add_flops(graph: torch.fx.Graph, nodes: list[Node]) -> None:
    """Fill `Node.flops` of the report's nodes (matched by name) from the graph they were read from."""
    counter = FlopCounterMode(display=False)
    cache: dict = {}
    by_name = {n.name: n for n in nodes}
    for node in graph.nodes:
        entry = by_name.get(node.name)
        if entry is not None:
            try:
                entry.flops = node_flops(node, counter, cache)
            except Exception:  # noqa: BLE001  a formula that does not take this op's arguments: no count, not 0
                entry.flops = None

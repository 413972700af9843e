"""Raw torch's node lists for one module and its inputs, in the terms the report uses: what fxlens's nodes
are checked against (tests/worker/levels/test_engine_vs_torch.py, tests/worker/construction/test_real_repos.py,
bench/reach.py).

A row is (name, op, target, num_users, line, shape, dtype): `line` is the innermost line of `path` in the
node's stack trace, `shape`/`dtype` those of a single tensor value (None otherwise).
"""

from __future__ import annotations

import copy
import inspect
import re
from typing import NamedTuple

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp
from torch.utils._pytree import tree_leaves, tree_map, tree_map_only


class Row(NamedTuple):
    name: str
    op: str
    target: str
    num_users: int
    line: int | None
    shape: list | None
    dtype: str | None


def innermost_line(stack_trace: str | None, path: str) -> int | None:
    lines = [int(m.group(1)) for m in re.finditer(rf'File "{re.escape(str(path))}", line (\d+)', stack_trace or "")]
    return lines[-1] if lines else None


def _size(size) -> object:
    """An int, or the text of a size only known at run time (`u0` after `.item()` or `nonzero`)."""
    try:
        return int(size)
    except Exception:  # noqa: BLE001 - an unbacked SymInt has no value
        return str(size)


def _dtype(dtype: torch.dtype | None) -> str | None:
    return str(dtype).replace("torch.", "") if dtype is not None else None


def defaults_left(instance: torch.nn.Module, args: tuple, kwargs: dict) -> dict:
    """`concrete_args` as HuggingFace's tracer gives them: the forward parameters a call leaves to a
    None, bool, number or string default, so `if mask is None` is decided as the call decides it."""
    signature = inspect.signature(instance.forward)
    passed = signature.bind_partial(*args, **kwargs).arguments
    return {
        name: p.default
        for name, p in signature.parameters.items()
        if name not in passed
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and type(p.default) in (type(None), bool, int, float, str)
    }


def fx_concrete_args(instance: torch.nn.Module, args: tuple, kwargs: dict) -> dict | None:
    """The `concrete_args` torch needs: none when `symbolic_trace(instance)` traces as it is; when it
    fails, the defaults the call leaves (`defaults_left`), which fxlens then freezes and says so."""
    try:
        # on a copy: a forward that assigns to `self` (`self.mask = self.mask.to(x)`) leaves a Proxy there
        torch.fx.symbolic_trace(copy.deepcopy(instance))
        return None
    except Exception:  # noqa: BLE001  the plain trace fails: the frozen one is what fxlens shows
        return defaults_left(instance, args, kwargs) or None


def fx_graph(instance: torch.nn.Module, concrete_args: dict | None = None) -> torch.fx.GraphModule:
    """symbolic_trace, keeping the stack traces that give each node its line."""
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(instance, concrete_args=concrete_args or None)
    return torch.fx.GraphModule(tracer.root, graph)


def fx_rows(
    instance: torch.nn.Module, inputs: tuple, path: str, partial: bool = False, concrete_args: dict | None = None
) -> list[Row]:
    """The fx graph with ShapeProp's shapes (`inputs`: every placeholder's value, in order). ShapeProp's
    error propagates (`.item()` on meta: try real tensors), unless `partial`: then shapes stop where
    propagation stopped."""
    gm = fx_graph(instance, concrete_args)
    # the graph as symbolic_trace returned it: running it can add nodes to it (a forward that stored a
    # Proxy on `self`, `self.mask = self.mask.to(x)`, leaves the GraphModule reading that Proxy)
    traced = [
        (
            n,
            n.name,
            n.op,
            n._pretty_print_target(n.target) if n.op == "call_function" else str(n.target),
            len(n.users),
            innermost_line(n.stack_trace, path),
        )
        for n in gm.graph.nodes
    ]
    try:
        ShapeProp(gm).propagate(*inputs)
    except Exception:
        if not partial:
            raise
    rows = []
    for n, name, op, target, users, line in traced:
        meta = n.meta.get("tensor_meta")
        single = meta is not None and hasattr(meta, "shape")
        rows.append(
            Row(
                name,
                op,
                target,
                users,
                line,
                [_size(s) for s in meta.shape] if single else None,
                _dtype(meta.dtype) if single else None,
            )
        )
    return rows


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer by name, shared ones under each of their names."""
    return {
        **dict(module.named_parameters(remove_duplicate=False)),
        **dict(module.named_buffers(remove_duplicate=False)),
    }


def cpu_export(instance: torch.nn.Module, args: tuple, kwargs: dict | None = None) -> torch.export.ExportedProgram:
    """`torch.export.export(instance, args, kwargs)` as on the CPU. A module built on meta is exported on fake
    CPU tensors made from its meta ones: the CPU's graph without the CPU's memory (exported on meta tensors,
    SDPA picks another output layout, and the graph gains a `contiguous` a CPU export has not)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.nn.utils.stateless import _reparametrize_module

    state = _state(instance)
    on_meta = lambda t: t.device.type == "meta"  # noqa: E731
    if not any(on_meta(t) for t in state.values()) and not any(
        on_meta(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
    ):
        return torch.export.export(instance, args, kwargs=kwargs or None, strict=False)
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)

    def fake(t: torch.Tensor) -> torch.Tensor:
        made = mode.fake_tensor_converter.from_meta_and_device(
            mode, t if on_meta(t) else t.to("meta"), torch.device("cpu")
        )
        return torch.nn.Parameter(made, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else made

    swapped = {name: fake(t) for name, t in state.items()}
    # tensors kept as plain attributes (`self.rope = rotary_table(...)` of a set-up call) are the CPU's too
    held = [
        (sub, name, value)
        for sub in instance.modules()
        for name, value in vars(sub).items()
        if type(value) is torch.Tensor and on_meta(value)
    ]
    try:
        for sub, name, value in held:
            setattr(sub, name, fake(value))
        with _reparametrize_module(instance, swapped), mode:
            args, kwargs = tree_map_only(torch.Tensor, fake, (args, kwargs or {}))
            return torch.export.export(instance, args, kwargs=kwargs or None, strict=False)
    finally:
        for sub, name, value in held:
            setattr(sub, name, value)


def export_rows(program: torch.export.ExportedProgram, path: str) -> list[Row]:
    rows = []
    for n in program.graph.nodes:
        value = n.meta.get("val")
        tensor = isinstance(value, torch.Tensor)
        target = str(n.target) if isinstance(n.target, torch._ops.OpOverload) else n._pretty_print_target(n.target)
        line = None if n.op in ("placeholder", "output") else innermost_line(n.meta.get("stack_trace"), path)
        rows.append(
            Row(
                n.name,
                n.op,
                target,
                len(n.users),
                line,
                [_size(s) for s in value.shape] if tensor else None,
                _dtype(value.dtype) if tensor else None,
            )
        )
    return rows


class _Called(Exception):
    """The child has been called: the rest of the parent's forward is not needed."""


def first_call_of(parent: torch.nn.Module, path: str, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """The (args, kwargs) the submodule at `path` first receives when `parent(*args, **kwargs)` runs (a
    forward pre-hook, as a user would check), or None when the run never calls it. A run that fails after
    the call (`.item()` on meta) still counts. A parent built on meta whose meta run fails before the call
    is run eagerly on the CPU, with weights that are each one value expanded (a 7B model in no memory): the
    path an eager CPU run takes, recorded as meta tensors."""
    child = parent.get_submodule(path)
    seen: list = []

    def hook(module, a, k):
        # the containers as they are at the call (a list the parent appends to later must not grow in the record)
        seen.append(tree_map(lambda leaf: leaf, (a, k)))
        raise _Called

    handle = child.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        for run in (_as_given, _on_weightless_cpu):
            try:
                with torch.no_grad():
                    run(parent, args, kwargs)
            except Exception:  # noqa: BLE001 - what the child received before the parent failed is enough
                pass
            if seen:
                break
    finally:
        handle.remove()
    if not seen:
        return None
    call = seen[0] if run is _as_given else tree_map_only(torch.Tensor, lambda t: t.to("meta"), seen[0])
    return tuple(call[0]), dict(call[1])


def _as_given(parent: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    parent(*args, **kwargs)


def _on_weightless_cpu(parent: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    from torch.nn.utils.stateless import _reparametrize_module

    def one_value(t: torch.Tensor) -> torch.Tensor:
        if t.dtype == torch.bool:
            made = torch.ones((), dtype=torch.bool)
        elif t.dtype.is_floating_point:
            made = torch.full((), 0.02, dtype=t.dtype)
        else:
            made = torch.zeros((), dtype=t.dtype)
        made = made.expand(t.shape)
        return torch.nn.Parameter(made, requires_grad=False) if isinstance(t, torch.nn.Parameter) else made

    state = _state(parent)
    if not any(t.device.type == "meta" for t in state.values()):
        return
    inputs = tree_map_only(
        torch.Tensor,
        lambda t: (
            torch.randn(t.shape).to(t.dtype) if t.dtype.is_floating_point else torch.zeros(t.shape, dtype=t.dtype)
        )
        if t.is_meta
        else t,
        (args, kwargs),
    )
    with _reparametrize_module(parent, {name: one_value(t) for name, t in state.items()}):
        parent(*inputs[0], **inputs[1])

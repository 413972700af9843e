"""The `fx` level: symbolic_trace semantics, every node mapped to the user's source span."""

from __future__ import annotations

import inspect
import itertools
import re
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

from fxlens.report import Diagnostic, LevelResult, Node, Span
from fxlens.worker.failures.classify import classify, message_text
from fxlens.worker.levels import devices, instance_state
from fxlens.worker.levels.limitations import limitation_diagnostics
from fxlens.worker.levels.syntax import FileSyntax
from fxlens.worker.levels.values import SampledSizes, describe, free_sizes, scale_up


class SourceMappingTracer(fx.Tracer):
    """A Tracer that keeps, per node, the innermost span in the analysed file and the module scope."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        # per submodule instance called: its class and the span of the call (what a graph view's group
        # box reveals), the first call when an instance is called twice
        self.scopes: dict[str, dict] = {}

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        path = self.path_of_module(m)
        if path not in self.scopes:
            where = self._innermost_user_frame()
            span = dict(zip(("line", "col", "end_line", "end_col"), where[1:])) if where else {}
            self.scopes[path] = {"class": type(m).__name__, **span}
        return super().call_module(m, forward, args, kwargs)

    def create_node(self, *args: Any, **kwargs: Any) -> fx.Node:
        node = super().create_node(*args, **kwargs)
        if node.op not in ("placeholder", "output"):
            node.meta["fxlens_source"] = self._innermost_user_frame()
        stack = getattr(self, "module_stack", None)
        node.meta["fxlens_scope"] = next(reversed(stack)) if stack else ""
        return node

    def _innermost_user_frame(self) -> tuple | None:
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_filename == self.path:
                qualname = getattr(code, "co_qualname", code.co_name)
                if sys.version_info >= (3, 11):
                    # the instruction running in this frame, without listing the whole function's
                    position = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
                    if position is not None and position[0] is not None:
                        line, end_line, col, end_col = position
                        return qualname, line, col, end_line, end_col
                return qualname, frame.f_lineno, None, None, None
            frame = frame.f_back
        return None


_CONSTANTS = (type(None), bool, int, float, str)


def bound_arguments(instance: torch.nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    """forward's parameter name -> the value the call gives it (a `**kwargs` parameter: a dict of the
    rest, `*args`: a tuple), defaults left out."""
    try:
        return dict(inspect.signature(instance.forward).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {}


def unpassed_constants(instance: torch.nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    """forward's parameters the call leaves to a constant default (None, a bool, a number, a string):
    symbolic_trace's `concrete_args`. Traced as proxies, `if mask is None` would be decided as if the
    caller passed a value (HF's `forward(input_ids=None, inputs_embeds=None)` then raises); running
    forward with the default is what the call does, so the graph is specialised on it."""
    try:
        parameters = inspect.signature(instance.forward).parameters.values()
    except (TypeError, ValueError):
        return {}
    passed = set(bound_arguments(instance, args, kwargs))
    return {
        p.name: p.default
        for p in parameters
        if p.name not in passed
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and type(p.default) in _CONSTANTS
    }


def trace(module: torch.nn.Module, path: str, concrete: dict[str, Any] | None = None) -> fx.GraphModule:
    return _trace_with(SourceMappingTracer(path), module, concrete)


def trace_so_far(
    module: torch.nn.Module, path: str, guessed: list[str]
) -> tuple[fx.GraphModule | None, fx.Graph | None]:
    """The graph input guessing reads, the `guessed` parameters traced and the rest left to their constant
    defaults (as the guessed call leaves them): (the GraphModule, its graph), or when tracing fails (None,
    the graph up to the failure): where each parameter flows first is still known there (DiT fails in
    its last line, after every input was used)."""
    concrete = {k: v for k, v in unpassed_constants(module, (), {}).items() if k not in guessed}
    tracer = SourceMappingTracer(path)
    try:
        gm = _trace_with(tracer, module, concrete)
    except Exception:  # noqa: BLE001  the fx level traces again and reports the failure itself
        return None, getattr(tracer, "graph", None)
    return gm, gm.graph


def _trace_with(
    tracer: SourceMappingTracer, module: torch.nn.Module, concrete: dict[str, Any] | None
) -> fx.GraphModule:
    # a forward that assigns to `self` (`self.mask = self.mask.to(x.dtype)`) leaves a Proxy there: neither
    # the GraphModule (it copies the attributes its graph reads) nor the next step may see it
    snapshot = instance_state.Snapshot(module)
    try:
        try:
            graph = tracer.trace(module, concrete_args=concrete or None)
        finally:
            snapshot.restore(keep_added=True)
        gm = fx.GraphModule(tracer.root, graph, type(module).__name__)
        gm.meta["fxlens_concrete"] = dict(concrete or {})  # what it was specialised on (see _graph_for)
        gm.meta["fxlens_scopes"] = tracer.scopes
        return gm
    finally:
        snapshot.restore()


def _graph_for(example: Any, path: str) -> tuple[fx.GraphModule, BaseException | None]:
    """The example's graph as `symbolic_trace(module)` makes it: every parameter a placeholder, those
    with defaults too. Only when that fails and the call leaves parameters to constant defaults is the
    module traced again with them frozen (`concrete_args`, as HuggingFace's tracer does): then the plain
    trace's error comes along, for the note that says so."""
    if example.graph is not None and example.graph.meta.get("fxlens_concrete") == {}:
        return example.graph, None
    try:
        return trace(example.instance, path, {}), None
    except Exception as error:  # noqa: BLE001  raised below unless freezing the defaults lets it through
        plain = error
    concrete = (
        unpassed_constants(example.instance, example.inputs, example.kwargs) if example.inputs is not None else {}
    )
    frozen = None
    if concrete:
        try:
            frozen = trace(example.instance, path, concrete)
        except Exception:  # noqa: BLE001  torch's own failure (the plain trace's) is the one to report
            frozen = None
    if frozen is None:
        raise plain
    return frozen, plain


def _defaults_frozen(gm: fx.GraphModule, plain: BaseException) -> str:
    """The level's note when the defaults had to be frozen: which, why, and the call that gives this graph."""
    frozen = gm.meta["fxlens_concrete"]
    said = ", ".join(f"{name}={value!r}" for name, value in frozen.items())
    args = ", ".join(f"{name!r}: {value!r}" for name, value in frozen.items())
    return (
        f"defaults frozen: {said} (symbolic_trace fails with them traced as inputs: "
        f"{message_text(plain)[:200]}); this is the graph of "
        f"`torch.fx.symbolic_trace(m, concrete_args={{{args}}})`"
    )


class ValueRecorder(fx.Interpreter):
    """Runs the graph on meta inputs and keeps each node's value (shape propagation)."""

    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, Any] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        self.values[n.name] = result
        return result

    def placeholder(self, target: Any, args: tuple, kwargs: dict) -> Any:
        # one value per placeholder (see by_placeholder): a `*args` / `**kwargs` one gets its own
        if isinstance(target, str) and target.startswith("*"):
            return next(self.args_iter)
        return super().placeholder(target, args, kwargs)


def by_placeholder(gm: fx.GraphModule, example: Any) -> tuple[tuple, list | None]:
    """The example's inputs (and their free dims) in the order of the graph's placeholders, bound by
    name as Python binds the call to forward: symbolic_trace makes a placeholder for every parameter,
    defaults and `**kwargs` included, and the graph module takes them positionally."""
    named = bound_arguments(example.instance, example.inputs, example.kwargs)
    flat = example.flat()
    free = dict(zip(map(id, flat), example.dims)) if example.dims else {}
    values: list[Any] = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        name = str(node.target).lstrip("*")
        if name in named:
            values.append(named[name])
        elif str(node.target).startswith("**"):
            values.append({})
        elif str(node.target).startswith("*"):
            values.append(())
        elif node.args:
            values.append(node.args[0])  # the parameter's default
        else:
            raise TypeError(f"forward() missing a value for its parameter {name!r}")
    dims = [free.get(id(v)) for v in values] if free else None
    return tuple(values), dims


def target_text(node: fx.Node) -> str:
    """The target as torch prints it (`fc`, `operator.add`, `torch.relu`), aten overloads as `aten.addmm.default`."""
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    return node._pretty_print_target(node.target)


def graph_node(n: fx.Node, described: tuple[list | None, str | None, str | None]) -> Node:
    """What every level reports of a node of its graph: name, opcode, target, users, torch's printout, and the
    shape, dtype and text `describe` gave its value; the level adds where it came from."""
    shape, dtype, value = described
    return Node(
        name=n.name,
        op=n.op,
        target=target_text(n),
        num_users=len(n.users),
        users=[u.name for u in n.users],
        text=n.format_node() or "",
        shape=shape,
        dtype=dtype,
        value=value,
    )


def nodes_of(graph: fx.Graph, values: dict[str, Any], names: SampledSizes, twins: dict[str, Any]) -> list[Node]:
    result = []
    for n in graph.nodes:
        source = n.meta.get("fxlens_source")
        entry = graph_node(
            n, describe(values[n.name], names, twins.get(n.name)) if n.name in values else (None, None, None)
        )
        entry.scope = n.meta.get("fxlens_scope", "")
        if isinstance(n.target, torch._ops.OpOverload):
            entry.overload = n.target._overloadname
        if source:
            entry.function, entry.line, entry.col, entry.end_line, entry.end_col = source
        result.append(entry)
    return result


def _narrow_get_attr(node: Node, lines: list[str]) -> None:
    """A get_attr node is made where its value is first used, so its frame span is the enclosing
    expression (`self.fc(x) + self.shift` for `shift`): narrow it to `self.shift` when the span has
    exactly one such spelling."""
    if node.op != "get_attr" or node.line is None or node.end_line != node.line or node.col is None:
        return
    if not 0 < node.line <= len(lines):
        return
    segment = lines[node.line - 1].encode()[node.col : node.end_col]
    attribute = node.target.rsplit(".", 1)[-1].encode()
    matches = list(re.finditer(rb"\bself\." + re.escape(attribute) + rb"\b", segment))
    if len(matches) == 1:
        start = node.col
        node.col, node.end_col = start + matches[0].start(), start + matches[0].end()


class PropagationError(Exception):
    """Shape propagation stopped at `node`; `values` holds what was computed before it."""

    def __init__(self, node: fx.Node | None, error: BaseException, values: dict[str, Any]) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.node, self.error, self.values = node, error, values


def values_for(
    gm: fx.GraphModule,
    inputs: tuple,
    dims: list | None,
    start: str = "meta",
    rebuild: Callable[[], torch.nn.Module] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], SampledSizes, devices.Ran]:
    """Each node's value on the example inputs, its twin on scaled inputs, how to name sizes, and which
    tensors ran the graph (meta unless the code needs values: see devices.py)."""
    try:
        ran = devices.run(_propagate, gm, inputs, start, rebuild)
    except devices.MetaDeviceLimit as limit:
        failure = limit.error if isinstance(limit.error, PropagationError) else PropagationError(None, limit, {})
        raise PropagationError(failure.node, limit, failure.values) from limit
    first = ran.value
    if not dims or not any(dims):
        return first, {}, SampledSizes({}), ran
    try:
        second = devices.run(_propagate, gm, scale_up(inputs, dims), ran.tensors, rebuild).value
    except (PropagationError, devices.MetaDeviceLimit):
        second = {}  # e.g. a length check the scaled sizes fail: the example's sizes still hold
    return first, second, SampledSizes(free_sizes(inputs, dims)), ran


def _shape_gap(failure: PropagationError, path: str, lines: list[str], class_span: Span) -> Diagnostic:
    """Say where shapes stop (e.g. `.item()` on a meta tensor): the graph itself is fine."""
    source = failure.node.meta.get("fxlens_source") if failure.node is not None else None
    span = Span(source[1], source[2] or 0, source[3] or source[1], source[4] or 0) if source else class_span
    diagnostic = classify(failure.error, path, lines, "inputs", "fx", span)
    diagnostic.severity = "information"
    diagnostic.message = f"no shapes from here on (the graph is fine): {diagnostic.message}"
    return diagnostic


def _propagate(gm: fx.GraphModule, inputs: tuple) -> dict[str, Any]:
    recorder = ValueRecorder(gm)
    try:
        recorder.run(*inputs)
    except Exception as error:
        failed = next((n for n in gm.graph.nodes if n.name not in recorder.values), None)
        raise PropagationError(failed, error, recorder.values) from error
    return recorder.values


def run(
    example: Any, path: str, lines: list[str], class_span: Span, syntax: FileSyntax | None = None, shapes: bool = True
) -> LevelResult:
    """`syntax`: the file's, when the caller traces more than one class of it (parsed once). `shapes=False`: the
    graph's values are not propagated, for a caller that reads only the findings (propagation makes none but the
    information that shapes stop somewhere)."""
    started = time.perf_counter()
    try:
        gm, plain_failure = _graph_for(example, path)
    except Exception as error:  # noqa: BLE001  the user's forward failing to trace: the level's diagnostic
        diagnostic = classify(error, path, lines, "trace", "fx", class_span)
        return LevelResult("fx", False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)
    values: dict[str, Any] = {}
    twins: dict[str, Any] = {}
    names, diagnostics = SampledSizes({}), []
    if example.inputs is not None and shapes:
        try:
            values, twins, names, ran = values_for(
                gm, *by_placeholder(gm, example), example.build.tensors, getattr(example, "rebuild", None)
            )
            devices.note(example.build, ran)
        except PropagationError as failure:
            values = failure.values
            diagnostics.append(_shape_gap(failure, path, lines, class_span))
    nodes = nodes_of(gm.graph, values, names, twins)
    for node in nodes:
        _narrow_get_attr(node, lines)
    diagnostics += limitation_diagnostics(
        gm, nodes, lines, class_span.line, type(example.instance).__name__, syntax or FileSyntax(lines)
    )
    notes = [] if sys.version_info >= (3, 11) else ["whole lines only: column spans need Python >= 3.11"]
    if plain_failure is not None:
        notes.insert(0, _defaults_frozen(gm, plain_failure))
    note = "; ".join(notes)
    return LevelResult(
        "fx",
        True,
        nodes,
        diagnostics,
        gm.code,
        time.perf_counter() - started,
        note,
        scopes=gm.meta.get("fxlens_scopes", {}),
    )

"""What raw torch makes of a class fxlens reported: the module rebuilt from the report's own
`directive` (or, for a child, from its parent's directive and the inputs a forward pre-hook sees),
then torch.fx.symbolic_trace and torch.export on the same args and kwargs."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import torch
import torch.fx
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import ClassReport, FileReport

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from torch_nodes import (
    cpu_export,
    first_call_of,
    fx_concrete_args,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "building"
# the sizes fxlens gives free dims in its examples (worker/construction/build.py), to read "B", "2*B" as numbers
FREE = {"B": 2, "T": 8}


def analyse_each(
    paths: list[Path],
    classes: list[str] | None = None,
    levels: tuple[str, ...] | None = None,
    roots: list[str] | None = None,
    **options: Any,
) -> list[FileReport]:
    """Each file's report, in the order of `paths`, from one warm worker, one file after another, each in a
    trace child of its own (default levels unless `levels`; the other TraceOptions as given, e.g.
    `surface="check"` as `fxlens check` asks). Files of the same name in different folders each get theirs."""
    options = TraceOptions(levels=levels, **options) if levels else TraceOptions(**options)

    async def run() -> list[FileReport]:
        client = WorkerClient()
        await client.start()
        try:
            return [await client.analyse(str(p), p.read_text(), options, classes=classes, roots=roots) for p in paths]
        finally:
            await client.stop()

    return asyncio.run(run())


def analyse(
    paths: list[Path],
    classes: list[str] | None = None,
    levels: tuple[str, ...] | None = None,
    roots: list[str] | None = None,
    **options: Any,
) -> dict[str, FileReport]:
    """Each file's report by its stem, from one warm worker (see `analyse_each`)."""
    reports = analyse_each(paths, classes, levels, roots, **options)
    return {p.stem: report for p, report in zip(paths, reports, strict=True)}


def analyse_one(path: Path, levels: tuple[str, ...], classes: list[str] | None = None, **options: Any) -> FileReport:
    """One file's report at `levels`, from a worker of its own (see `analyse`)."""
    return analyse([path], classes, levels, **options)[path.stem]


def analyse_together(files: dict[str, tuple[Path, tuple[str, ...]]]) -> dict[str, FileReport]:
    """Each file's report at its levels, by the name it is given, from one warm worker asked for them all at
    once: one worker's start (an interpreter importing torch) instead of one a file, and the worker traces two
    files at a time (its MAX_CHILDREN), a core each."""

    async def run() -> dict[str, FileReport]:
        client = WorkerClient()
        await client.start()
        try:
            reports = await asyncio.gather(
                *(client.analyse(str(p), p.read_text(), TraceOptions(levels=levels)) for p, levels in files.values())
            )
        finally:
            await client.stop()
        return dict(zip(files, reports, strict=True))

    return asyncio.run(run())


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)  # the name fxlens gives it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rebuild(path: Path, directive: str) -> tuple[torch.nn.Module, tuple | None, dict]:
    """Evaluate a `# fxlens:` expression in the file's namespace plus torch, on the meta device."""
    module = load(path)
    namespace = {**vars(module), "torch": torch}
    expr = ast.parse(directive, mode="eval").body
    evaluate = lambda node: eval(compile(ast.Expression(node), str(path), "eval"), namespace)  # noqa: E731
    with torch.device("meta"):
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
            instance = evaluate(expr.func)
            return instance, tuple(evaluate(a) for a in expr.args), {k.arg: evaluate(k.value) for k in expr.keywords}
        return evaluate(expr), None, {}


def example_of(path: Path, report: FileReport, cls: ClassReport) -> tuple[torch.nn.Module, tuple | None, dict]:
    """The instance and inputs raw torch gets for `cls`, from what the report says."""
    if not cls.built_by:
        return rebuild(path, cls.build.directive)
    parent, parent_args, parent_kwargs = example_of(path, report, report.find_class(cls.built_by))
    path = re.search(r"`([^`]+)` instance", cls.build.detail).group(1)
    child = parent.get_submodule(path)
    if cls.build.inputs_source == "inferred":  # the parent's run recorded nothing: the inputs fxlens lists
        return (child, *_listed_inputs(cls))
    seen = first_call_of(parent, path, parent_args, parent_kwargs)
    return (child, *seen) if seen else (child, None, {})


def _listed_inputs(cls: ClassReport) -> tuple[tuple, dict]:
    """Meta tensors of the shapes and dtypes the report lists, positional then keyword."""
    args, kwargs = [], {}
    for spec in cls.build.inputs:
        shape = [eval(str(size), {}, dict(FREE)) for size in spec.shape]
        value = torch.zeros(shape, dtype=getattr(torch, spec.dtype), device="meta")
        if spec.keyword:
            kwargs[spec.name] = value
        else:
            args.append(value)
    return tuple(args), kwargs


def _innermost_line(stack_trace: str | None, path: Path) -> int | None:
    lines = [int(m.group(1)) for m in re.finditer(rf'File "{re.escape(str(path))}", line (\d+)', stack_trace or "")]
    return lines[-1] if lines else None


class _Values(torch.fx.Interpreter):
    """Each node's value, placeholders given by name as Python binds the call to forward."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        self.values[n.name] = result = super().run_node(n)
        return result

    def placeholder(self, target, args, kwargs):
        return next(self.args_iter)


def _by_name(gm: torch.fx.GraphModule, args: tuple, kwargs: dict) -> list:
    bound = inspect.signature(gm.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


def _shape(value: Any) -> list | None:
    return [int(s) for s in value.shape] if isinstance(value, torch.Tensor) else None


def fx_nodes(instance: torch.nn.Module, args: tuple | None, kwargs: dict, path: Path) -> list[tuple]:
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    # symbolic_trace as it is; only where that fails, the defaults the call leaves frozen (as fxlens does)
    concrete = fx_concrete_args(instance, args, kwargs) if args is not None else None
    graph = tracer.trace(instance, concrete_args=concrete or None)
    gm = torch.fx.GraphModule(tracer.root if hasattr(tracer, "root") else instance, graph)
    values = _Values(gm)
    if args is not None:
        try:
            values.run(*_by_name(gm, args, kwargs))
        except RuntimeError:
            pass  # `.item()` on meta: shapes stop there, for torch as for fxlens
    return [
        (
            n.name,
            n.op,
            n.target if n.op != "call_function" else n._pretty_print_target(n.target),
            len(n.users),
            _innermost_line(n.stack_trace, path),
            _shape(values.values.get(n.name)),
        )
        for n in gm.graph.nodes
    ]


def aten_nodes(instance: torch.nn.Module, args: tuple, kwargs: dict, path: Path) -> list[tuple]:
    ep = cpu_export(instance, args, kwargs)
    return [
        (
            n.name,
            n.op,
            str(n.target) if isinstance(n.target, torch._ops.OpOverload) else n._pretty_print_target(n.target),
            len(n.users),
            _innermost_line(n.meta.get("stack_trace"), path) if n.op not in ("placeholder", "output") else None,
            _shape(n.meta.get("val")),
        )
        for n in ep.graph.nodes
    ]


def _size(size: Any) -> Any:
    return eval(size, {}, dict(FREE)) if isinstance(size, str) else size


def reported(cls: ClassReport, level: str) -> list[tuple]:
    return [
        (n.name, n.op, n.target, n.num_users, n.line, [_size(s) for s in n.shape] if n.shape is not None else None)
        for n in cls.levels[level].nodes
    ]


def expected(path: Path, report: FileReport, cls: ClassReport, level: str) -> list[tuple]:
    instance, args, kwargs = example_of(path, report, cls)
    if level == "fx":
        return [
            (name, op, str(target), users, line, shape)
            for name, op, target, users, line, shape in fx_nodes(instance, args, kwargs, path)
        ]
    return aten_nodes(instance, args, kwargs, path)


def op_rows(nodes: list) -> list[tuple]:
    """(name, op, target) of a report's nodes, as torch_op_rows gives them of raw torch's graph."""
    return [(n.name, n.op, n.target) for n in nodes]


def torch_op_rows(graph: torch.fx.Graph) -> list[tuple]:
    return [
        (n.name, n.op, n._pretty_print_target(n.target) if n.op == "call_function" else str(n.target))
        for n in graph.nodes
    ]

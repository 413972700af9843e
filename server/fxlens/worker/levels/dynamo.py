"""The `dynamo` level: what `torch.compile` captures (`torch._dynamo.explain`), every graph and every
graph break, the breaks as warnings at the user's line and column in torch's own words.

Dynamo runs the module's Python for real, so a break's eager tail (the `if` on a tensor, `.item()`) needs
values: where meta tensors cannot run it, devices.run retries on small real CPU tensors. Not on fake
tensors: measured on torch 2.13, explain under a FakeTensorMode loses the graphs after an `.item()` break
(1 graph, 0 breaks where real tensors give 2 graphs, 1 break).

Free sizes (B, T) are named as the other levels name them: from a second run on scaled inputs (values.scale_up),
in a forked process, whose sizes are compared node by node. Not from dynamic shapes: torch.compile's first
compile is static, and a dynamic capture adds SymInt inputs and size nodes the user's graph does not have.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch

from fxlens.guard_report import CompiledFrame
from fxlens.report import Diagnostic, LevelResult, Node, Span
from fxlens.worker.failures.classify import classify, message_text, whole_line
from fxlens.worker.levels import devices, graph_breaks, guards
from fxlens.worker.levels.aten import user_line_span
from fxlens.worker.levels.forked import ForkedCall, Lost
from fxlens.worker.levels.fx import graph_node, target_text
from fxlens.worker.levels.values import SampledSizes, describe, free_sizes, plain_sizes, scale_up, twin_of

LEVEL = "dynamo"
KINDS = ("meta", "cpu")  # see above: fake tensors undercount graphs and breaks
# how the fx level shows code that reads a tensor's value: a call reading it, or a failure classified so
_VALUE_READS = frozenset({"item", "tolist", "numpy", "__bool__", "__int__", "__float__"})
_VALUE_FAILURES = frozenset({"data-dependent-control-flow", "item/numpy"})


def reads_values(fx: LevelResult | None) -> bool:
    """Whether the fx level found the forward reading a tensor's value (an `if` on a tensor, `.item()`).

    Dynamo runs such code eagerly, which the meta device cannot: a meta run would fail only after
    dynamo has captured the graph before it, so the level starts on small real CPU tensors instead (when
    the module is small enough to have real weights; a shape read also fails fx, and costs a meta run)."""
    if fx is None:
        return False
    if any(d.category in _VALUE_FAILURES for d in fx.diagnostics):
        return True
    return any(n.op == "call_method" and n.target in _VALUE_READS for n in fx.nodes)


_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>\w+?)_at_\d+$")


@dataclass
class Explained:
    """What dynamo made of one call: explain's graphs, and every graph break it met, a graph after it or
    not (explain's own `break_reasons` are only those a compiled graph carries: a forward whose first
    statement breaks has none)."""

    graphs: list[Any]
    graph_count: int
    reasons: list[Any]
    logged: graph_breaks.Logged
    # each frame compiled, with its guards (read only when the caller names the user's file)
    frames: list[CompiledFrame] = field(default_factory=list)


@contextmanager
def no_function_modes() -> Iterator[None]:
    """The call as torch.compile makes it for the user: dynamo traces into the Python of every active
    TorchFunctionMode (fxlens's own, which makes tensors asked on a missing GPU on meta, would add breaks of
    its own), so none is active while it runs."""
    popped = [torch._C._pop_torch_function_stack() for _ in range(torch._C._len_torch_function_stack())]
    try:
        yield
    finally:
        for mode in reversed(popped):
            torch._C._push_on_torch_function_stack(mode)


def explain(
    module: torch.nn.Module, args: tuple, kwargs: dict, source: tuple[str, list[str]] | None = None
) -> Explained:
    """torch._dynamo.explain's run, from a clean dynamo state (its caches would otherwise answer for an
    earlier version of the same code), keeping dynamo's list of every break reason, which explain's
    closing reset empties, and the graph-break log. `source` (the user's path and lines): the guards of
    each compiled frame are read too, before that reset."""
    import torch._dynamo
    from torch._dynamo.backends.debugging import ExplainWithBackend
    from torch._dynamo.utils import graph_break_reasons

    backend = ExplainWithBackend("eager")
    exported = guards.Exported()
    # as explain itself runs: its flag makes dynamo log every break, not only the first of a kind
    with (
        fresh_dynamo(),
        graph_breaks.listening() as logged,
        mock.patch("torch._dynamo.symbolic_convert.explain", True),
        no_function_modes(),
    ):
        torch._dynamo.optimize(backend, nopython=False, guard_export_fn=exported)(module)(*args, **kwargs)
        output = backend.output()
        frames = guards.compiled_frames(*source, exported) if source is not None else []
        return Explained(output.graphs, output.graph_count, list(graph_break_reasons), logged, frames)


@contextmanager
def fresh_dynamo() -> Iterator[None]:
    """A dynamo run from a clean state (its caches would otherwise answer for an earlier version of the
    same code), which leaves none behind for the next one."""
    import torch._dynamo

    # dynamo's first compile in a process turns torch.distributions' argument checks off for good
    # (TorchPatcher.patch): the levels and classes traced after this one must see the user's setting
    validate = torch.distributions.Distribution._validate_args
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()
        torch.distributions.Distribution.set_default_validate_args(validate)


def _function(name: str) -> str:
    """A resumed frame is named for where it resumes (`torch_dynamo_resume_in_forward_at_11`): the user's name."""
    match = _RESUME.match(name)
    return match.group("name") if match else name


def _value(n: Any) -> Any:
    return n.meta.get("example_value", n.meta.get("val"))


def _signature(graph_module: Any) -> list:
    return [[n.name, n.op, target_text(n)] for n in graph_module.graph.nodes]


def nodes_of(
    graphs: list[Any],
    path: str,
    lines: list[str],
    names: SampledSizes | None = None,
    twins: list[dict[str, Any]] | None = None,
) -> list[Node]:
    """`twins[i]`: graph i's node values in the run on scaled inputs, by name, which `names` reads sizes from."""
    result = []
    names = names or SampledSizes({})
    for index, graph_module in enumerate(graphs):
        twin = twins[index] if twins is not None and index < len(twins) else {}
        for n in graph_module.graph.nodes:
            entry = graph_node(n, describe(_value(n), names, twin.get(n.name)))
            entry.graph = index
            where = user_line_span(n, path, lines)
            if where:
                function, span = where
                entry.function = _function(function)
                span.copy_to(entry)
            result.append(entry)
    return result


@dataclass
class _Break:
    span: Span
    gb_type: str | None
    message: str  # what torch raised, or explain's reason when its log said nothing
    count: int = 1
    # the breaks inside the frames this call ran eagerly (`Logger.debug`), each where it is (_where)
    inside: list[str] = field(default_factory=list)


def _span(frame: Any, lines: list[str]) -> Span:
    """The frame's expression (Python >= 3.11 gives columns: 0-based UTF-8, as the report's are)."""
    if getattr(frame, "colno", None) is not None and getattr(frame, "end_colno", None) is not None:
        return Span(frame.lineno, frame.colno, frame.end_lineno or frame.lineno, frame.end_colno)
    return whole_line(frame.lineno, lines)


def _innermost(reason: Any, path: str) -> Any:
    stack = list(reason.user_stack or [])
    mine = [f for f in stack if os.path.abspath(f.filename) == path]
    return mine[-1] if mine else (stack[-1] if stack else None)


def _uses(reasons: list[Any]) -> int:
    """How many times one break is reached in a call. A break inside an inlined call is recorded once
    by each frame that reaches it (the caller breaks at the call, then the callee's own frame breaks),
    and a frame dynamo already compiled is not traced again: the most reasons any one stack depth
    records is how many uses reached it (a child used twice: two at depth 2, even when its own frame
    was traced once)."""
    depths: dict[int, int] = {}
    for reason in reasons:
        depth = len(reason.user_stack or [])
        depths[depth] = depths.get(depth, 0) + 1
    return max(depths.values())


def _breaks(
    reasons: list[Any], logged: graph_breaks.Logged, path: str, lines: list[str], class_span: Span
) -> list[_Break]:
    """One per innermost frame of the user's file (a child used 12 times breaks 12 times at one line).

    A break in code of no frame of the user's file that follows a break of the user's file is that break's
    call run eagerly: dynamo compiles each frame the eager call enters (`logger.debug(...)` breaks at the call,
    then again in `Logger.debug`'s own frame at `self.isEnabledFor`). It is said at the call and counted
    (torch.compile breaks there too), but it is not one more use of the line, and nothing in the user's file is
    left to place it at but the class (where it went, its fix then known to no rewrite)."""
    groups: dict[Any, list[Any]] = {}
    inside: dict[Any, list[Any]] = {}
    last = None  # the key of the last break in the user's file
    for reason in reasons:
        innermost = _innermost(reason, path)
        if not any(os.path.abspath(f.filename) == path for f in reason.user_stack or []) and last is not None:
            inside[last].append(reason)
            continue
        # a break with no frame of the user's file (code fxlens cannot place) is told apart by where it is
        key = (innermost.filename, innermost.lineno, innermost.colno) if innermost else reason.reason
        groups.setdefault(key, []).append(reason)
        inside.setdefault(key, [])
        last = key if innermost is not None and os.path.abspath(innermost.filename) == path else last
    found = []
    for key, group in groups.items():
        reason = group[0]
        stack = list(reason.user_stack or [])
        mine = [f for f in stack if os.path.abspath(f.filename) == path]
        messages = [
            m for r in group if r.user_stack for m in logged.at(r.user_stack[-1].filename, r.user_stack[-1].lineno)
        ]
        typed = [(graph_breaks.gb_type_in(m), m) for m in messages + [r.reason for r in group]]
        gb_type, message = next(((t, m) for t, m in typed if t), (None, reason.reason))
        span = _span(mine[-1], lines) if mine else class_span
        found.append(_Break(span, gb_type, message, _uses(group), [_where(r) for r in inside[key]]))
    return found


def _where(reason: Any) -> str:
    """A break in library code, as its function, file and line: "`debug` (logging/__init__.py:1476)"."""
    frame = (reason.user_stack or [None])[-1]
    if frame is None:
        return "a frame dynamo did not name"
    parts = os.path.normpath(frame.filename).split(os.sep)
    return f"`{frame.name}` ({'/'.join(parts[-2:])}:{frame.lineno})"


def _diagnostic(found: _Break) -> Diagnostic:
    entry = graph_breaks.describe(found.gb_type, found.message)
    times = f" (×{found.count})" if found.count > 1 else ""
    again = (
        f" It breaks here {found.count} times in one call: this code runs once per use (a child "
        f"module used {found.count} times, or a loop)."
        if found.count > 1
        else ""
    )
    if found.inside:
        again += (
            f" The call then runs eagerly and dynamo breaks inside it too ({len(found.inside)} more): in "
            f"{', '.join(w if n == 1 else f'{w} ×{n}' for w, n in Counter(found.inside).items())}; they go when "
            "this call does."
        )
    span = found.span
    if entry is None:  # not in this torch's registry: torch's own message, whole
        first = found.message.strip().splitlines()[0] if found.message.strip() else "unknown reason"
        return Diagnostic.at(
            span,
            "warning",
            "graph-break",
            f"torch.compile graph break{times}: {first}",
            explanation=f"Dynamo stops capturing here and runs this code eagerly: "
            f"{' '.join(found.message.split())}{again}",
            level=LEVEL,
        )
    link = f" More: {entry.link}" if entry.link else ""
    return Diagnostic.at(
        span,
        "warning",
        "graph-break",
        f"torch.compile graph break{times}: {entry.gb_type} [{entry.gb_id}]",
        explanation=f"{entry.explanation}{again}{link}",
        fix=" ".join(entry.hints),
        level=LEVEL,
        gb_id=entry.gb_id,
        hints=entry.hints,
    )


def _explained(
    example: Any, start: str, call: tuple | None = None, source: tuple[str, list[str]] | None = None
) -> devices.Ran:
    """explain's run from `start` (meta, or real CPU tensors when the forward reads values), on the example's
    inputs or `call` (args, kwargs). A module too large for the CPU whose code only mixes in CPU tensors it
    makes (`torch.arange(T)`, no value read) runs on fake CPU tensors: measured on torch 2.13, their graphs
    and breaks are the real CPU run's."""
    call = call if call is not None else (example.inputs, example.kwargs)
    step = lambda m, inputs: explain(m, inputs[0], inputs[1], source)  # noqa: E731
    try:
        return devices.run(step, example.instance, call, start, getattr(example, "rebuild", None), kinds=KINDS)
    except devices.MetaDeviceLimit as limit:
        if not devices.only_mixed_devices(limit.summary):
            raise
        ran = devices.run(step, example.instance, call, "fake", kinds=("fake",))
        ran.reason = f"{limit.summary}: ran on fake tensors instead"
        return ran


def _scaled_explained(example: Any, start: str, free: list) -> ForkedCall:
    """explain's run on the inputs with B doubled and T tripled, in a forked process: each graph's signature
    and its nodes' sizes, as plain data."""

    def summary() -> dict:
        try:
            graphs = _explained(example, start, example.unflat(scale_up(example.flat(), free))).value.graphs
        except Exception as error:  # noqa: BLE001  e.g. a size check the scaled sizes fail: said in the note
            return {"error": message_text(error)}
        return {
            "graphs": [
                {"signature": _signature(g), "sizes": {n.name: plain_sizes(_value(n)) for n in g.graph.nodes}}
                for g in graphs
            ]
        }

    return ForkedCall(summary)


def _twins(graphs: list[Any], scaled: ForkedCall) -> tuple[list[dict[str, Any]], str]:
    """Each graph's node values in the scaled run, by name; a graph the scaled run captured otherwise has none."""
    try:
        found = scaled.result()
    except Lost as lost:
        return [], f"sizes are the example's (the process running larger batch/sequence sizes: {lost})"
    if "error" in found:
        return [], f"sizes are the example's (running with larger batch/sequence sizes failed: {found['error']})"
    twins = [
        {name: twin_of(sizes) for name, sizes in other["sizes"].items()}
        if other["signature"] == _signature(graph)
        else {}
        for graph, other in zip(graphs, found["graphs"])
    ]
    if len(found["graphs"]) != len(graphs) or not all(twins):
        return twins, "some sizes are the example's (larger batch/sequence sizes give different graphs)"
    return twins, ""


# The breaks are counted from every break reason dynamo records, not explain's `graph_break_count`, which
# is graphs - 1 (a break after which no tensor op runs, `if x.sum() > 0: return x`, makes no graph), nor
# its `break_reasons`, which are the compiled graphs' (a break before any tensor op has none): both
# still break torch.compile(fullgraph=True).
def run(
    example: Any, path: str, lines: list[str], class_span: Span, fx: LevelResult | None = None, names: bool = True
) -> LevelResult:
    """`fx`: the class's fx level, which says whether the forward reads values (see reads_values). `names=False`:
    nobody reads the shapes (a check, a fix's proof), so no run on larger sizes names B and T."""
    started = time.perf_counter()
    if example.inputs is None:
        return LevelResult(LEVEL, False, note="no example inputs: dynamo runs the forward on them")
    start = "cpu" if reads_values(fx) and devices.fits_on_cpu(example.instance) else "meta"
    free = example.dims if names and example.dims and any(example.dims) else None
    scaled = _scaled_explained(example, start, free) if free else None
    try:
        ran = _explained(example, start, source=(path, lines))
    except Exception as error:  # noqa: BLE001  the user's forward failing under dynamo: the level's diagnostic
        if scaled is not None:
            scaled.cancel()
        diagnostic = classify(error, path, lines, "trace", LEVEL, class_span)
        diagnostic.level = LEVEL
        return LevelResult(LEVEL, False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)
    devices.note(example.build, ran)
    explained = ran.value
    twins: list[dict[str, Any]] = []
    note = ""
    if scaled is not None:
        twins, note = _twins(explained.graphs, scaled)
    sizes = SampledSizes(free_sizes(example.flat(), free) if free else {})  # free: the scaled run ran
    found = _breaks(explained.reasons, explained.logged, path, lines, class_span)
    diagnostics = [_diagnostic(b) for b in found]
    code = "\n".join(f"# graph {i}\n{g.code.strip()}\n" for i, g in enumerate(explained.graphs))
    return LevelResult(
        LEVEL,
        True,
        nodes_of(explained.graphs, path, lines, sizes, twins),
        diagnostics,
        code,
        time.perf_counter() - started,
        note,
        graphs=explained.graph_count,
        breaks=sum(b.count + len(b.inside) for b in found),
        frames=explained.frames,
    )

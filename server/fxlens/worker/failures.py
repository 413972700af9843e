"""Turn an exception raised while building or tracing into a diagnostic a person can act on."""
from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass
from typing import Optional

from fxlens.report import Diagnostic, Span


@dataclass
class Rule:
    category: str
    needles: tuple[str, ...]
    explanation: str
    fix: str


# Checked in order; the first rule whose needle is in "<ExceptionType>: <message>" wins.
RULES = (
    Rule("data-dependent-control-flow",
         ("symbolically traced variables cannot be used as inputs to control flow",
          "GuardOnDataDependentSymNode", "Data-dependent branching", "data dependent",
          "Could not guard on data-dependent"),
         "Python decides this branch from a tensor's value (or a size torch cannot know while tracing); "
         "a graph records operations, not decisions, so there is no single graph for both outcomes.",
         "Compute both sides and select with `torch.where(cond, a, b)`, use `torch.cond(pred, true_fn, false_fn, "
         "operands)`, or pass the deciding argument as a constant via `concrete_args`."),
    Rule("proxy-iteration",
         ("object cannot be interpreted as an integer", "Proxy object cannot be iterated",
          "object is not iterable"),
         "A loop or `range()` needs a real integer, but under symbolic tracing sizes such as `x.shape[0]` are "
         "graph values (Proxies), not numbers.",
         "Iterate over a size known at construction time (store it in `__init__`), move the loop into a "
         "function registered with `torch.fx.wrap`, or make this submodule a leaf of the tracer."),
    Rule("proxy-as-integer",
         ("slice indices must be integers", "have an __index__ method", "must be int, not Proxy"),
         "A plain tensor or Python code needs a real integer here (e.g. slicing a buffer), but the size "
         "comes from a traced tensor, so while tracing it is a graph value (a Proxy), not a number.",
         "Use a traced op instead, e.g. `torch.narrow(self.buf, 0, 0, n)` for `self.buf[:n]`, or move the "
         "code into a function registered with `torch.fx.wrap`."),
    Rule("builtin-on-proxy",
         ("'len' is not supported in symbolic tracing", "is not supported in symbolic tracing"),
         "A Python builtin like `len()` cannot look inside a graph value while tracing.",
         "Use `x.shape[0]` / `x.size(0)` instead of `len(x)`, or call `torch.fx.wrap('len')` at module level."),
    Rule("item/numpy",
         ("__array_struct__", "__array__", "numpy", ".item()", "tolist"),
         "The value leaves the graph (to NumPy or a Python number), which tracing cannot follow.",
         "Keep the computation in torch ops, or move it into a function registered with `torch.fx.wrap`."),
    Rule("memory",
         ("MemoryError", "Cannot allocate memory", "DefaultCPUAllocator: can't allocate"),
         "The code tried to allocate more memory than the trace limit allows.",
         "Build weights on the meta device (fxlens does) and avoid large real tensors at module level; "
         "raise `fxlens.memoryLimitMB` if the allocation is intended."),
)


def user_frames(exc: BaseException, path: str) -> list[tuple[types.CodeType, int, int]]:
    """(code, lasti, lineno) of every traceback frame in `path`, outermost first, across the chain."""
    seen: set[int] = set()
    found: list[tuple[types.CodeType, int, int]] = []
    current: Optional[BaseException] = exc
    chain = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    # the original cause is innermost in time: read it first so its frames come last
    for error in reversed(chain):
        tb = error.__traceback__
        while tb is not None:
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
                found.append((tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno))
            tb = tb.tb_next
    return found


def span_of(code: types.CodeType, lasti: int, lineno: int, lines: list[str]) -> Span:
    """The exact columns of the instruction, where Python (>= 3.11) records them."""
    if sys.version_info >= (3, 11):
        positions = list(code.co_positions())
        index = lasti // 2
        if 0 <= index < len(positions):
            line, end_line, col, end_col = positions[index]
            if line is not None and col is not None:
                return Span(line, col, end_line or line, end_col if end_col is not None else col)
    return whole_line(lineno, lines)


def whole_line(lineno: int, lines: list[str]) -> Span:
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    indent = len(text.encode()) - len(text.lstrip().encode())
    return Span(lineno, indent, lineno, len(text.rstrip().encode()))


def _innermost_frame_in_torch(exc: BaseException) -> bool:
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return bool(last) and f"{os.sep}torch{os.sep}nn{os.sep}" in last


def classify(exc: BaseException, path: str, lines: list[str], stage: str, level: Optional[str],
             fallback: Span) -> Diagnostic:
    """One error diagnostic for `exc`, at the innermost line of `path` that led to it.

    `stage` is what was going on ("construction", "inputs", "trace"), the category when no rule fits.
    """
    text = f"{type(exc).__name__}: {exc}"
    frames = user_frames(exc, path)
    span = span_of(*frames[-1], lines) if frames else fallback
    rule = next((r for r in RULES if any(n in text for n in r.needles)), None)
    if rule is not None:
        category, explanation, fix = rule.category, rule.explanation, rule.fix
    elif stage == "trace" and _innermost_frame_in_torch(exc):
        category = "library-internal"
        explanation = "Tracing failed inside a torch.nn module called from this line."
        fix = "Trace through it at another level (aten), or keep it as a leaf module of the tracer."
    else:
        category = stage
        explanation = {"construction": "Building the module raised an error.",
                       "inputs": "Calling the module on its example inputs raised an error.",
                       "load": "Running the file's definitions raised an error."}.get(stage, "Tracing raised an error.")
        fix = {"construction": "Add a `# fxlens: MyModule(args)(example_inputs)` comment above the class.",
               "inputs": "Add a `# fxlens: MyModule(args)(torch.randn(...))` comment above the class "
                         "with inputs this forward accepts."}.get(stage, "")
    source = lines[span.line - 1].strip() if 0 < span.line <= len(lines) else ""
    if category == "data-dependent-control-flow" and source.startswith("assert"):
        explanation = ("An `assert` turns a traced value into a Python bool, which tracing cannot do: "
                       "the size or value is not known while the graph is recorded.")
        fix = ("Use `torch._assert(cond, msg)` (traced as a graph node), check the shape outside `forward`, "
               "or trace at the aten level where static sizes are known.")
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Diagnostic(span.line, span.col, span.end_line, span.end_col, "error", category,
                      f"{type(exc).__name__}: {first_line[:300]}", explanation, fix, level)

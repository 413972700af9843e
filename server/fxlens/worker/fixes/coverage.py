"""The lines a fix replaces, run in the proof: outputs equal on inputs that never take a branch the fix rewrites
prove nothing about that branch (a rewrite of an `elif` alone passed on draws that never took its `if`).

The statements of the original file inside the edited ranges are the lines to run. The original module runs
under a line tracer of the user's file alone (other frames are not traced) on the proof's inputs; while a line
has not run, variants of the drawn inputs are tried (each floating tensor negated, times ten, both, times a
hundredth), and those that run a line not run before join the inputs compared. A line none of them runs (a
branch the module's own code makes unreachable for such inputs) is said in the proof.

A loop whose count the replaced code computes (`steps = int(c) + 1`, `for _ in range(steps):`) runs its body on
every input: what must be seen is the body running a different number of times, so its first line is needed at
two counts in one call (a variant that gives it another count joins the inputs); a loop seen at one count only
is said in the proof as well.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._pytree import tree_map

from fxlens.fix_report import TextEdit

# what each variant does to every floating tensor of an input set: the sign and the scale that conditions read
VARIANTS: tuple[Callable[[torch.Tensor], torch.Tensor], ...] = (
    lambda t: -t,
    lambda t: t * 10,
    lambda t: t * -10,
    lambda t: t * 0.01,
)

InputSet = tuple[tuple, dict]


def _edited(tree: ast.Module, edits: list[TextEdit]) -> Iterator[ast.AST]:
    """Every node of the top-level statements that hold an edit's lines (a function that holds one is inside
    them): the rest of the file is never walked."""
    for statement in tree.body:
        if any(e.line <= (statement.end_lineno or statement.lineno) and statement.lineno <= e.end_line for e in edits):
            yield from ast.walk(statement)


def lines_to_run(tree: ast.Module, edits: list[TextEdit]) -> set[int]:
    """The first line of each statement inside a function of `tree` (the original text's) that starts within an
    edit's lines."""
    spans = [(e.line, e.end_line) for e in edits]
    found = set()
    for function in _edited(tree, edits):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if node is not function and isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef):
                if any(a <= node.lineno <= b for a, b in spans):
                    found.add(node.lineno)
    return found


def loops_to_vary(tree: ast.Module, edits: list[TextEdit]) -> set[int]:
    """The first body line of each `for ... in range(n)` within an edit's lines whose `n` is assigned there too
    (`tree`: the original text's)."""
    spans = [(e.line, e.end_line) for e in edits]
    inside = lambda node: any(a <= node.lineno <= b for a, b in spans)  # noqa: E731
    found = set()
    for function in _edited(tree, edits):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        counted = {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and inside(node)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for loop in ast.walk(function):
            it = getattr(loop, "iter", None)
            if isinstance(loop, ast.For) and inside(loop) and isinstance(it, ast.Call) and it.args:
                if isinstance(it.func, ast.Name) and it.func.id == "range" and isinstance(it.args[-1], ast.Name):
                    if it.args[-1].id in counted:
                        found.add(loop.body[0].lineno)
    return found


@contextmanager
def _lines_run(path: str, into: Counter[int]) -> Iterator[None]:
    """Counts in `into` each line of `path` that runs meanwhile (in this thread)."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            into[frame.f_lineno] += 1
        return local

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return local if event == "call" and frame.f_code.co_filename == path else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(previous)


def _variant(inputs: InputSet, change: Callable[[torch.Tensor], torch.Tensor]) -> InputSet:
    def one(value: Any) -> Any:
        return change(value) if isinstance(value, torch.Tensor) and value.dtype.is_floating_point else value

    return tree_map(one, inputs[0]), tree_map(one, inputs[1])


def covering(
    run: Callable[[InputSet], Any],
    path: str,
    sets: list[InputSet],
    needed: set[int],
    varied: frozenset[int] = frozenset(),
) -> tuple[list[InputSet], set[int], set[int]]:
    """The variants of `sets` that run lines of `needed` the sets do not, or lines of `varied` a number of times
    not seen yet (in order, each adding one); the lines of `needed` that no input runs, and those of `varied` that
    every input runs the same number of times. `run(inputs)` calls the original module."""
    ran: set[int] = set()
    counts: dict[int, set[int]] = {line: set() for line in varied}

    def once(inputs: InputSet) -> tuple[set[int], set[int]]:
        """The lines one call runs, and the lines of `varied` it runs a number of times not seen before."""
        seen: Counter[int] = Counter()
        with _lines_run(path, seen):
            run(inputs)
        recounted = {line for line in varied if seen[line] not in counts[line]}
        for line in varied:
            counts[line].add(seen[line])
        return set(seen), recounted

    def unvaried() -> set[int]:
        return {line for line, c in counts.items() if len(c) < 2}

    for inputs in sets:
        ran |= once(inputs)[0]
    added: list[InputSet] = []
    for change in VARIANTS:
        for inputs in sets:
            if needed <= ran and not unvaried():
                return added, set(), set()
            variant, waiting = _variant(inputs, change), unvaried()
            try:
                seen, recounted = once(variant)
            except Exception:  # noqa: BLE001  an input the original refuses (an assert on its sign) is not one to compare
                continue
            if (seen - ran) & needed or recounted & waiting:
                added.append(variant)
            ran |= seen
    return added, needed - ran, unvaried()

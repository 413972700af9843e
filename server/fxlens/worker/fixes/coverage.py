"""The lines a fix replaces, run in the proof: outputs equal on inputs that never take a branch the fix rewrites
prove nothing about that branch (a rewrite of an `elif` alone passed on draws that never took its `if`).

The statements of the original file inside the edited ranges are the lines to run. The original module runs
under a line tracer of the user's file alone (other frames are not traced) on the proof's inputs; while a line
has not run, variants of the drawn inputs are tried (each floating tensor negated, times ten, both, times a
hundredth), and those that run a line not run before join the inputs compared. A line none of them runs (a
branch the module's own code makes unreachable for such inputs) is said in the proof.
"""

from __future__ import annotations

import ast
import sys
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


def lines_to_run(text: str, edits: list[TextEdit]) -> set[int]:
    """The first line of each statement inside a function of `text` that starts within an edit's lines."""
    spans = [(e.line, e.end_line) for e in edits]
    found = set()
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if node is not function and isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef):
                if any(a <= node.lineno <= b for a, b in spans):
                    found.add(node.lineno)
    return found


@contextmanager
def _lines_run(path: str, into: set[int]) -> Iterator[None]:
    """Adds to `into` each line of `path` that runs meanwhile (in this thread)."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            into.add(frame.f_lineno)
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
    run: Callable[[InputSet], Any], path: str, sets: list[InputSet], needed: set[int]
) -> tuple[list[InputSet], set[int]]:
    """The variants of `sets` that run lines of `needed` the sets do not (in order, each adding one), and the
    lines of `needed` that no input runs. `run(inputs)` calls the original module."""
    ran: set[int] = set()
    with _lines_run(path, ran):
        for inputs in sets:
            run(inputs)
    added: list[InputSet] = []
    for change in VARIANTS:
        for inputs in sets:
            if needed <= ran:
                return added, set()
            variant = _variant(inputs, change)
            seen: set[int] = set()
            try:
                with _lines_run(path, seen):
                    run(variant)
            except Exception:  # noqa: BLE001  an input the original refuses (an assert on its sign) is not one to compare
                continue
            if (seen - ran) & needed:
                added.append(variant)
            ran |= seen
    return added, needed - ran

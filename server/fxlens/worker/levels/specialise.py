"""Say where the aten graph is specialised to an example size (a loop over `x.size(0)`, an `assert` or
`if` on a shape): a hint at that line.

The evidence is the second, scaled export the aten level runs anyway (B doubled, T tripled; see
aten._scaled_export): it failed at a line of the user's file, or it gave another graph. Then the
lines whose node counts differ between the two exports are the ones that depend on a size. Nothing
here runs when the two graphs agree."""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

from fxlens.report import Diagnostic, Node
from fxlens.worker.failures.classify import whole_line
from fxlens.worker.levels.values import GROWTH

CATEGORY = "specialised"
_SIZE_READ = re.compile(r"\b(\w+)\s*\.\s*(?:shape\s*\[\s*(-?\d+)\s*\]|size\s*\(\s*(-?\d+)\s*\))|\blen\(\s*(\w+)\s*\)")


@dataclass(frozen=True)
class FreeSize:
    """One free dim of one input: `x.shape[0]`, 2 in the example, 4 in the scaled export."""

    input: str
    dim: int
    example: int
    scaled: int

    @property
    def factor(self) -> int:
        return self.scaled // self.example

    def text(self, size: int | None = None) -> str:
        return f"{self.input}.shape[{self.dim}] == {self.example if size is None else size}"


def free_sizes(example: Any, dims: list) -> list[FreeSize]:
    """The free dims of the example's inputs, positional then keyword (the order `dims` has: Example.flat)."""
    try:
        names = list(inspect.signature(example.instance.forward).parameters)
    except (TypeError, ValueError):
        names = []
    count = len(example.inputs or ())
    names = names[:count] + list(example.kwargs)
    flat = example.flat()
    found = []
    for index, free in enumerate(dims or []):
        value = flat[index] if index < len(flat) else None
        for dim, label in (free or {}).items():
            if value is None or not hasattr(value, "shape") or not -len(value.shape) <= dim < len(value.shape):
                continue  # a free size inside a nested input (a tuple of tensors): no single name to give it
            name = names[index] if index < len(names) else f"arg{index}"
            size = int(value.shape[dim])
            found.append(FreeSize(name, dim, size, size * GROWTH[label]))
    return found


def hints(example: Any, free: list, scaled: dict, example_nodes: list[Node], lines: list[str]) -> list[Diagnostic]:
    """Hints for a scaled export that failed or gave another graph than the example's (`scaled` is its
    summary: `error` and `line`, or `signature` and `lines`, its nodes per source line: aten.line_counts)."""
    sizes = free_sizes(example, free)
    if not sizes:
        return []
    if "error" in scaled:
        line = scaled.get("line")
        return [_failed_hint(line, scaled["error"], sizes, lines)] if line else []
    after = {int(line): int(count) for line, count in scaled.get("lines") or []}
    return _count_hints(_counts(example_nodes), after, sizes, lines)


def _sizes_read(text: str, sizes: list[FreeSize]) -> list[FreeSize]:
    """The free sizes a piece of source reads by name (`x.shape[1]`, `x.size(0)`, `len(x)`)."""
    read = []
    for match in _SIZE_READ.finditer(text):
        name, dim = (match.group(4), 0) if match.group(4) else (match.group(1), int(match.group(2) or match.group(3)))
        read += [s for s in sizes if s.input == name and (s.dim == dim or dim < 0) and s not in read]
    return read


def _failed_hint(line: int, error: str, sizes: list[FreeSize], lines: list[str]) -> Diagnostic:
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    read = _sizes_read(source, sizes) or sizes
    example = ", ".join(s.text() for s in read)
    scaled = ", ".join(s.text(s.scaled) for s in read)
    what = "this assert fails" if source.strip().startswith("assert") else "this line raises"
    return _hint(line, lines, f"the aten graph is specialised to {example}: with {scaled} {what} ({error})")


def _counts(nodes: list[Node]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for node in nodes:
        if node.line is not None and node.op not in ("placeholder", "output"):
            counts[node.line] = counts.get(node.line, 0) + 1
    return counts


def _enclosing_decisions(lines: list[str]) -> dict[int, ast.For | ast.While | ast.If]:
    """Each line inside a `for`/`while`/`if` body -> the innermost such statement (for the header line)."""
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return {}
    owner: dict[int, ast.For | ast.While | ast.If] = {}
    for node in ast.walk(tree):  # outer statements first: inner ones overwrite
        if isinstance(node, (ast.For, ast.While, ast.If)):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                current = owner.get(line)
                if current is None or current.lineno <= node.lineno:
                    owner[line] = node
    return owner


def _count_hints(
    before: dict[int, int], after: dict[int, int], sizes: list[FreeSize], lines: list[str]
) -> list[Diagnostic]:
    changed = sorted(line for line in set(before) | set(after) if before.get(line, 0) != after.get(line, 0))
    decisions = _enclosing_decisions(lines) if changed else {}
    by_header: dict[int, list[int]] = {}
    for line in changed:
        statement = decisions.get(line)
        header = statement.lineno if statement is not None else line
        by_header.setdefault(header, []).append(line)
    found = []
    for header, body in by_header.items():
        statement = decisions.get(body[0])
        n, m = sum(before.get(b, 0) for b in body), sum(after.get(b, 0) for b in body)
        if statement is not None and statement.lineno == header:
            test = statement.iter if isinstance(statement, ast.For) else statement.test
            read = _sizes_read(ast.unparse(test), sizes) or _by_ratio(n, m, sizes)
        else:
            read = _sizes_read(lines[header - 1] if 0 < header <= len(lines) else "", sizes) or _by_ratio(n, m, sizes)
        decision = statement if statement and statement.lineno == header else None
        found.append(_hint(header, lines, _count_message(decision, read or sizes, n, m)))
    return found


def _by_ratio(n: int, m: int, sizes: list[FreeSize]) -> list[FreeSize]:
    """The free sizes whose growth matches how the node count grew (a loop body repeats per item)."""
    return [s for s in sizes if n and m == n * s.factor]


def _count_message(statement: ast.stmt | None, read: list[FreeSize], n: int, m: int) -> str:
    example = ", ".join(s.text() for s in read)
    scaled = ", ".join(s.text(s.scaled) for s in read)
    if isinstance(statement, (ast.For, ast.While)):
        runs = _runs(statement, read)
        what = f"this loop unrolls {runs} times" if runs else "this loop is unrolled"
    elif isinstance(statement, ast.If):
        what = "this `if` is decided for it"
    else:
        what = "this line's nodes depend on it"
    return f"the aten graph is specialised to {example}: {what} ({n} nodes; {m} with {scaled})"


def _runs(statement: ast.stmt, read: list[FreeSize]) -> int | None:
    """How many times `for _ in range(<size>)` / `for _ in <tensor>` runs for the example, if plain."""
    if not isinstance(statement, ast.For) or len(read) != 1:
        return None
    iterated = statement.iter
    if isinstance(iterated, ast.Call) and getattr(iterated.func, "id", "") == "range" and len(iterated.args) == 1:
        return read[0].example
    return None


def _hint(line: int, lines: list[str], message: str) -> Diagnostic:
    span = whole_line(line, lines)
    return Diagnostic.at(
        span,
        "hint",
        CATEGORY,
        message,
        "torch.export records one graph for the example inputs' sizes; a Python loop, `if` or "
        "`assert` that reads a size is decided while tracing, so the graph holds for that size "
        "only.",
        "Expected for a static graph. To see it for other sizes, give those inputs in a "
        "`# fxlens:` directive; to make it size-independent, iterate over a size fixed at "
        "construction or use tensor ops (`torch.where`, batched ops) instead of Python control "
        "flow.",
        level="aten",
    )

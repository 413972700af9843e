"""Pure rendering of a level's nodes: torch's printout, a node table, shapes, structured graph data."""

from __future__ import annotations

from typing import Any

from fxlens.render import kernels
from fxlens.render.cost import cost_compact
from fxlens.render.draft import missing_lines
from fxlens.render.ladder import rung
from fxlens.report import ClassReport, Diagnostic, LevelResult, Node

_DTYPE_SHORT = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int8": "i8",
    "uint8": "u8",
    "bool": "bool",
}


def short_dtype(dtype: str | None) -> str:
    return _DTYPE_SHORT.get(dtype or "", dtype or "")


def shape_text(node: Node) -> str:
    """`(B, 16)`, `()` for a scalar tensor, the value text for non-tensors, "" when unknown."""
    if node.shape is not None:
        return "(" + ", ".join(str(s) for s in node.shape) + ("," if len(node.shape) == 1 else "") + ")"
    return node.value or ""


def value_text(node: Node) -> str:
    """`(B, 16) f32`: what a hover or an inlay hint shows for the node's value."""
    shape = shape_text(node)
    return f"{shape} {short_dtype(node.dtype)}".strip() if node.shape is not None else shape


def _graphs(result: LevelResult) -> list[list[Node]]:
    """The level's graphs in order (dynamo captures one per graph break; the other levels have one)."""
    if all(n.graph is None for n in result.nodes):
        return [result.nodes]
    count = max(n.graph or 0 for n in result.nodes) + 1
    return [[n for n in result.nodes if (n.graph or 0) == index] for index in range(count)]


def printout(result: LevelResult) -> str:
    """The graph as torch prints it (`graph():` then one `%node : ...` line per node), each graph in turn."""
    graphs = _graphs(result)
    titled = len(graphs) > 1
    return "\n".join(
        (f"graph():  # graph {i} of {len(graphs)}" if titled else "graph():")
        + "\n"
        + "\n".join(f"    {n.text}" for n in nodes)
        for i, nodes in enumerate(graphs)
    )


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def node_table(result: LevelResult) -> str:
    if kernels.is_kernel_level(result):
        return _table(*kernels.kernel_rows(result))
    rows = [
        [
            n.name,
            n.op,
            n.target,
            str(n.num_users),
            shape_text(n),
            n.dtype or "",
            str(n.line) if n.line is not None else "",
        ]
        for n in result.nodes
    ]
    headers = ["node", "opcode", "target", "users", "shape", "dtype", "line"]
    if any(n.graph is not None for n in result.nodes):  # dynamo: which graph, between two graph breaks
        headers, rows = ["graph", *headers], [[str(n.graph), *row] for n, row in zip(result.nodes, rows)]
    return _table(headers, rows)


def diagnostic_line(path: str, d: Diagnostic) -> str:
    """`path:line:col: severity: message [category]`; a message's further lines (torch lists the
    overloads it expected) follow indented, so every line that starts with the path is one diagnostic."""
    message = d.message.replace("\n", "\n    ")
    return f"{path}:{d.line}:{d.col + 1}: {d.severity}: {message} [{d.category}]"


def diagnostics_text(path: str, diagnostics: list[Diagnostic]) -> str:
    parts = []
    for d in diagnostics:
        parts.append(diagnostic_line(path, d))
        if d.explanation:
            parts.append(f"    why: {d.explanation}")
        if d.fix:
            parts.append(f"    fix: {d.fix}")
    return "\n".join(parts)


def inputs_text(report: ClassReport) -> str:
    build = report.build
    # said only when it is not the usual meta device: the example ran on fake or real CPU tensors
    tensors = f", tensors: {build.tensors}" if build.tensors != "meta" else ""
    # guessed arguments say so wherever they show: the graph is only as good as the guess
    what = f"guessed arguments {build.detail}" if build.how == "guessed" else build.detail
    if not build.inputs:
        return f"built: {build.how}{tensors}" + (f" ({what})" if what else "")
    args = ", ".join(
        f"{i.name}: {'(' + ', '.join(map(str, i.shape)) + ')' if i.shape is not None else i.value}"
        + (f" {short_dtype(i.dtype)}" if i.dtype else "")
        for i in build.inputs
    )
    detail = f" — {what}" if what else ""
    return f"built: {build.how}, inputs {build.inputs_source}: {args}{tensors}{detail}"


def input_sources_text(report: ClassReport) -> str:
    """Where each guessed input's shape comes from ("" when no input was guessed)."""
    said = [f"{spec.name} — {spec.source}" for spec in report.build.inputs if spec.source]
    return "inputs guessed: " + "; ".join(said) if said else ""


def tensors_text(report: ClassReport) -> str:
    """Why the example did not run on meta tensors ("" when it did)."""
    reason = report.build.tensors_reason
    return f"tensors: {report.build.tensors} — {reason}" if reason else ""


def level_text(path: str, report: ClassReport, level: str) -> str:
    """Everything `fxlens graph` prints for one class at one level."""
    result = report.levels.get(level)
    header = f"== {report.name} ({level}) — {inputs_text(report)}"
    if result is None:
        return header + "\n(level not run)"
    parts = [header] + [text for text in (input_sources_text(report), tensors_text(report)) if text]
    compact = cost_compact(report)
    if compact:
        parts.append(compact)
    if result.ok:
        position = rung(result)
        parts += [f"rung: {position.name} — {position.why}", printout(result), "", node_table(result)]
    else:
        parts.append(f"{level}: FAILED" + (f" ({result.note})" if result.note else ""))
        if report.draft is not None:  # what fxlens lacks, and the directive that would give it
            parts += missing_lines(
                report.draft, markdown=False, offer="A directive to start from (each FILL_ is yours):"
            )
    if result.note and result.ok:
        parts.append(f"note: {result.note}")
    if result.diagnostics:
        parts += ["", diagnostics_text(path, result.diagnostics)]
    return "\n".join(parts)


def _drawn(n: Node) -> dict[str, Any]:
    shape = shape_text(n)
    # (value_text's shape, not computed again: the 70B-shaped model's backward draws 20,000 nodes)
    value = f"{shape} {short_dtype(n.dtype)}".strip() if n.shape is not None else shape
    return {
        "id": n.name,
        "op": n.op,
        "target": n.target,
        "shape": shape,
        "dtype": n.dtype,
        "label": f"{n.name}\n{n.op}[{n.target}]" + (f"\n{value}" if value else ""),
        "line": n.line,
        "col": n.col,
        "end_line": n.end_line,
        "end_col": n.end_col,
        "scope": n.scope,
    }


def graph_data(result: LevelResult) -> dict[str, Any]:
    """Nodes and data-flow edges for clients that draw the graph."""
    nodes = [_drawn(n) for n in result.nodes]
    edges = [{"source": n.name, "target": user} for n in result.nodes for user in n.users]
    return {"nodes": nodes, "edges": edges}

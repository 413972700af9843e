"""The inductor level's kernels, rendered: counts for the lens, a line's kernels for the hover, the CLI's
kernel table, and which kernel runs each aten/core-aten node (the graph view colours them by it).

Pure: report data -> text / plain data. A kernel node's `kernel` dict is worker/levels/kernel_map.py's.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import quote

from fxlens.ops import is_view, packet
from fxlens.report import ClassReport, LevelResult, Node

KINDS = ("fused", "extern", "fallback")
# VS Code's client command that opens a kernel's code (vscode-client/src/kernelDocument.ts); the server's
# own command, for other clients, is lsp/kernel_code.py's
SHOW_KERNEL = "fxlens.showKernel"
MAX_KERNELS = 8
MAX_OPS = 6
_WHAT = {"fused": "generated kernel", "extern": "library call", "fallback": "fallback, no inductor lowering"}


def kernels(result: Optional[LevelResult]) -> list[Node]:
    return [n for n in result.nodes if n.kernel] if result is not None else []


def is_kernel_level(result: Optional[LevelResult]) -> bool:
    """A level whose nodes are kernels (the inductor level), not graph nodes."""
    return bool(kernels(result))


def counts(result: LevelResult) -> dict[str, int]:
    found = {kind: 0 for kind in KINDS}
    for node in kernels(result):
        found[node.kernel["kind"]] = found.get(node.kernel["kind"], 0) + 1
    return found


def counts_text(result: LevelResult) -> str:
    """`4 kernels (2 fused, 2 extern)`; `in 2 graphs` when a graph break made several."""
    total = len(kernels(result))
    parts = [f"{n} {kind}" for kind, n in counts(result).items() if n]
    text = f"{total} kernel{'s' if total != 1 else ''}" + (f" ({', '.join(parts)})" if parts else "")
    if (result.graphs or 0) > 1:
        text += f" in {result.graphs} graphs"
    return text


def ranges(lines: list[int]) -> str:
    """`13–14, 20`: consecutive lines joined."""
    spans: list[list[int]] = []
    for line in sorted(set(lines)):
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ", ".join(f"{a}–{b}" if b > a else str(a) for a, b in spans)


def on_line(result: Optional[LevelResult], line: int) -> list[Node]:
    """The kernels that compute something of `line` (any of a kernel's lines, not only the first)."""
    return [n for n in kernels(result) if line in n.kernel["lines"]]


def fused_with(node: Node, line: int) -> list[int]:
    """The other lines whose ops this kernel computes too."""
    return [other for other in node.kernel["lines"] if other != line]


def ops_at(node: Node, line: int) -> list[str]:
    """The ops of `line` the kernel computes (`relu`, `addmm`), in graph order, once each."""
    names = next((s["post"] for s in node.kernel["sources"] if s["line"] == line), [])
    targets = dict(zip(node.kernel["post"], node.kernel["ops"]))
    return list(dict.fromkeys(packet(targets.get(name, name)) for name in names))


def device_text(result: LevelResult) -> str:
    device = next((n.kernel.get("device") for n in kernels(result)), "cpu")
    return "GPU, Triton" if device == "cuda" else "CPU, C++"


def kernel_command(uri: str, class_name: str, kernel: str) -> str:
    """A markdown link target that runs SHOW_KERNEL on this kernel."""
    return f"command:{SHOW_KERNEL}?{quote(json.dumps([uri, class_name, kernel]))}"


def hover_lines(code: Callable[[str], str], bold: Callable[[str], str], markdown: bool, cls: ClassReport,
                result: LevelResult, line: int, path: str) -> list[str]:
    """What the hover says of `line`'s kernels: each kernel, what it computes of the line, the other lines
    fused into it, and (Markdown) a link opening its code."""
    found = on_line(result, line)
    if not found:
        return []
    graphs = f"; {result.graphs} compiled graphs (graph breaks)" if (result.graphs or 0) > 1 else ""
    other = "a GPU's Triton kernels differ" if device_text(result).startswith("CPU") else "a CPU's C++ kernels differ"
    rows = [f"{bold('inductor')}: line {line} runs in {len(found)} kernel{'s' if len(found) != 1 else ''} "
            f"({device_text(result)}; {other}{graphs})"]
    uri = Path(path).as_uri() if path else ""
    for node in found[:MAX_KERNELS]:
        ops = ops_at(node, line)
        shown = ", ".join(ops[:MAX_OPS]) + (f", … {len(ops) - MAX_OPS} more" if len(ops) > MAX_OPS else "")
        parts = [f"{code(node.target)} {_WHAT.get(node.kernel['kind'], node.kernel['kind'])}"
                 + (f": {shown}" if shown else "")]
        others = fused_with(node, line)
        if others:
            parts.append(f"fused with line{'s' if len(others) != 1 else ''} {ranges(others)}")
        if (result.graphs or 0) > 1:
            parts.append(f"graph {node.graph}")
        if markdown and uri:
            parts.append(f"[show code]({kernel_command(uri, cls.name, node.name)})")
        rows.append(("- " if markdown else "  ") + " · ".join(parts))
    if len(found) > MAX_KERNELS:
        rows.append(f"… {len(found) - MAX_KERNELS} more kernels")
    return rows


def kernel_rows(result: LevelResult) -> tuple[list[str], list[list[str]]]:
    """The CLI's table of a kernel level (headers, rows): kernel, kind, lines, what it computes, users."""
    rows = []
    for node in kernels(result):
        ops = list(dict.fromkeys(packet(op) for op in node.kernel["ops"]))
        rows.append([str(node.graph), node.name, node.kernel["kind"], ranges(node.kernel["lines"]),
                     ", ".join(ops[:MAX_OPS]) + (" …" if len(ops) > MAX_OPS else ""), ", ".join(node.users)])
    return ["graph", "kernel", "kind", "lines", "ops", "users"], rows


# -- which kernel runs an aten / core-aten node ---------------------------------------------------

def kernel_of_nodes(level: LevelResult, inductor: LevelResult) -> dict[str, str]:
    """Aten-level node name -> the kernel (node name) that runs it, matched by source line and op.

    The aten levels (torch.export) and inductor's graphs (dynamo's) are separate traces with their own node
    names; what they share is the user's line and the ATen op. A node whose op one of its line's kernels
    computes (a core-aten `addmm` and the `extern_kernels.addmm`, a `relu` and the fused kernel holding the
    relu) belongs to that kernel; an op the kernels compute decomposed (aten's `linear` is a permute and an
    addmm below it) goes to the kernel that computes the line's work, not a view. Views inductor folds into
    its indexing (`permute`, `view`) and nodes of lines no kernel computes stay uncoloured."""
    by_line: dict[int, list[Node]] = {}
    for node in kernels(inductor):
        for line in node.kernel["lines"]:
            by_line.setdefault(line, []).append(node)
    found: dict[str, str] = {}
    for node in level.nodes:
        if node.op != "call_function" or node.line is None or node.line not in by_line:
            continue
        candidates = by_line[node.line]
        word = packet(node.target)
        match = next((k for k in candidates if word in ops_at(k, node.line)), None)
        if match is None and not is_view(word):
            match = next((k for k in candidates if any(not is_view(op) for op in ops_at(k, node.line))), None)
        if match is not None:
            found[node.name] = match.name
    return found

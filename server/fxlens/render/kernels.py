"""The inductor level's kernels, rendered: counts for the lens, a line's kernels for the hover, the CLI's
kernel table, and which kernel runs each aten/core-aten node (the graph view colours them by it).

Pure: report data -> text / plain data. A kernel node's `kernel` dict is worker/levels/kernel_map.py's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fxlens.ops import is_view, packet
from fxlens.report import ClassReport, LevelResult, Node

LEVEL = "inductor"  # the level whose nodes are kernels
KINDS = ("fused", "extern", "fallback")
# VS Code's client command that opens a kernel's code (vscode-client/src/kernelDocument.ts); the server's
# own command, for other clients, is lsp/kernel_code.py's
SHOW_KERNEL = "fxlens.showKernel"
MAX_KERNELS = 8
MAX_OPS = 6
_WHAT = {"fused": "generated kernel", "extern": "library call", "fallback": "fallback, no inductor lowering"}


def kernels(result: LevelResult | None) -> list[Node]:
    return [n for n in result.nodes if n.kernel] if result is not None else []


def _kernel(node: Node) -> dict[str, Any]:
    """A kernel node's `kernel` dict (every node `kernels` returns has one)."""
    return node.kernel or {}


def is_kernel_level(result: LevelResult | None) -> bool:
    """A level whose nodes are kernels (the inductor level), not graph nodes."""
    return result is not None and result.level == LEVEL


def counts(result: LevelResult) -> dict[str, int]:
    found = {kind: 0 for kind in KINDS}
    for node in kernels(result):
        kind = _kernel(node)["kind"]
        found[kind] = found.get(kind, 0) + 1
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


def on_line(result: LevelResult | None, line: int) -> list[Node]:
    """The kernels that compute something of `line` (any of a kernel's lines, not only the first)."""
    return [n for n in kernels(result) if line in _kernel(n)["lines"]]


def fused_with(node: Node, line: int) -> list[int]:
    """The other lines whose ops this kernel computes too."""
    return [other for other in _kernel(node)["lines"] if other != line]


def ops_at(node: Node, line: int) -> list[str]:
    """The ops of `line` the kernel computes (`relu`, `addmm`), in graph order, once each."""
    return list(dict.fromkeys(packet(p["target"]) for p in _kernel(node)["post"] if p["line"] == line))


def device_text(result: LevelResult) -> str:
    device = next((_kernel(n).get("device") for n in kernels(result)), "cpu")
    return "GPU, Triton" if device == "cuda" else "CPU, C++"


def kernel_command(uri: str, class_name: str, kernel: str) -> str:
    """A markdown link target that runs SHOW_KERNEL on this kernel."""
    return f"command:{SHOW_KERNEL}?{quote(json.dumps([uri, class_name, kernel]))}"


def hover_lines(
    code: Callable[[str], str],
    bold: Callable[[str], str],
    markdown: bool,
    cls: ClassReport,
    result: LevelResult,
    line: int,
    path: str,
) -> list[str]:
    """What the hover says of `line`'s kernels: each kernel, what it computes of the line, the other lines
    fused into it, and (Markdown) a link opening its code."""
    found = on_line(result, line)
    if not found:
        return []
    graphs = f"; {result.graphs} compiled graphs (graph breaks)" if (result.graphs or 0) > 1 else ""
    other = "a GPU's Triton kernels differ" if device_text(result).startswith("CPU") else "a CPU's C++ kernels differ"
    rows = [
        f"{bold('inductor')}: line {line} runs in {len(found)} kernel{'s' if len(found) != 1 else ''} "
        f"({device_text(result)}; {other}{graphs})"
    ]
    uri = Path(path).as_uri() if path else ""
    for node in found[:MAX_KERNELS]:
        ops = ops_at(node, line)
        shown = ", ".join(ops[:MAX_OPS]) + (f", … {len(ops) - MAX_OPS} more" if len(ops) > MAX_OPS else "")
        kind = _kernel(node)["kind"]
        parts = [f"{code(node.target)} {_WHAT.get(kind, kind)}" + (f": {shown}" if shown else "")]
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
    rows: list[list[str]] = []
    for node in kernels(result):
        kernel = _kernel(node)
        ops = list(dict.fromkeys(packet(op) for op in kernel["ops"] if not is_view(op)))
        rows.append(
            [
                str(node.graph),
                node.name,
                kernel["kind"],
                ranges(kernel["lines"]),
                ", ".join(ops[:MAX_OPS]) + (" …" if len(ops) > MAX_OPS else ""),
                ", ".join(node.users),
            ]
        )
    return ["graph", "kernel", "kind", "lines", "ops", "users"], rows


# -- which kernel runs an aten / core-aten node ---------------------------------------------------


def _base(name: str) -> str:
    """`layer_norm_1` -> `layer_norm`: a node's name without the counter fx adds to repeated names."""
    return re.sub(r"_\d+$", "", name)


# [(position, kernel)]: where a node doing work stands ((graph, position in it)) and the kernel running it
_Runs = list[tuple[tuple[int, int], str]]


def kernel_of_nodes(level: LevelResult, inductor: LevelResult) -> dict[str, str]:
    """Aten-level node name -> the kernel (node name) that runs it, matched through the line and the op.

    The aten levels (torch.export) and inductor's graphs (dynamo's, then aot_autograd's post-grad graph) are
    separate traces with their own node names; what they share is the user's line and the ATen ops:
    1. the k-th node computing op `addmm` on a line is the k-th post-grad `addmm` of that line, and runs in
       the kernel that computes it;
    2. an op inductor decomposed (export's `linear` is a permute and an addmm below it, `native_layer_norm` a
       var_mean and pointwise ops) is the k-th call of its kind on the line: the k-th pre-grad node there of
       that name (dynamo and export both name a call after its function: `linear_3`, `layer_norm_1`), and
       runs where that node's work runs;
    3. else it runs in the first kernel doing work on its line.
    Views (inductor folds them into its indexing, no work of their own) and the nodes of lines no kernel
    computes stay uncoloured."""
    posts: dict[tuple[int, str], _Runs] = {}  # (line, op) -> [(position, kernel)] of post-grad nodes doing work
    work: dict[int, _Runs] = {}  # line -> [(position, kernel)]
    pres: dict[int, dict[str, _Runs]] = {}  # line -> pre-grad name -> [(position, kernel)] of its work
    seen: set[tuple[int | None, str]] = set()
    for node in kernels(inductor):
        for post in _kernel(node)["post"]:
            if post["line"] is None or is_view(post["target"]) or (node.graph, post["name"]) in seen:
                continue  # (a node recomputed in a later kernel is the first kernel's)
            seen.add((node.graph, post["name"]))
            at = (node.graph or 0, post["at"] if post["at"] is not None else 0)
            posts.setdefault((post["line"], packet(post["target"])), []).append((at, node.name))
            work.setdefault(post["line"], []).append((at, node.name))
            for pre in post["pre"]:
                pres.setdefault(post["line"], {}).setdefault(pre, []).append((at, node.name))
    for found in (*posts.values(), *work.values(), *(k for line in pres.values() for k in line.values())):
        found.sort()
    ordinal: dict[tuple[int, str], int] = {}
    owners: dict[str, str] = {}
    for node in level.nodes:
        if node.op != "call_function" or node.line is None or is_view(node.target):
            continue
        word = packet(node.target)
        count = ordinal[(node.line, word)] = ordinal.get((node.line, word), -1) + 1
        named = sorted(
            (runs[0][0], pre)
            for pre, runs in pres.get(node.line, {}).items()
            if _base(pre) == _base(node.name) or (_base(pre) in word or word in _base(pre))
        )
        if (node.line, word) in posts:
            found = posts[(node.line, word)]
            owners[node.name] = found[min(count, len(found) - 1)][1]
        elif named:
            owners[node.name] = pres[node.line][named[min(count, len(named) - 1)][1]][0][1]
        elif node.line in work:
            owners[node.name] = work[node.line][0][1]
    return owners


def kernel_level(cls: ClassReport | None) -> LevelResult | None:
    """The class's traced kernel level (inductor), if it has one that compiled."""
    result = cls.levels.get(LEVEL) if cls is not None else None
    return result if result is not None and result.ok else None


def colour_nodes(drawn: list[dict[str, Any]], cls: ClassReport, result: LevelResult, levels: tuple[str, ...]) -> None:
    """The graph view's payload nodes get the kernel that runs them: `kernel` (its node name) and
    `kernel_colour` (its index in the kernel level: one colour per kernel, the same in every level's view).
    A kernel level's own nodes are their kernels (with `kind`, `lines` and `ops` for the details pane); the
    nodes of the ATen levels in `levels` are matched to kernels by kernel_of_nodes."""
    found = kernel_level(cls)
    if found is None:
        return
    index = {node.name: i for i, node in enumerate(kernels(found))}
    if result is found:
        for entry, node in zip(drawn, kernels(found)):
            kernel = _kernel(node)
            ops = list(dict.fromkeys(packet(op) for op in kernel["ops"] if not is_view(op)))
            entry.update(
                kernel=node.name,
                kernel_colour=index[node.name],
                kind=kernel["kind"],
                lines=ranges(kernel["lines"]),
                ops=", ".join(ops),
            )
        return
    if result.level not in levels:
        return
    owners = kernel_of_nodes(result, found)
    for entry in drawn:
        owner = owners.get(entry["id"])
        if owner is not None:
            entry.update(kernel=owner, kernel_colour=index[owner])

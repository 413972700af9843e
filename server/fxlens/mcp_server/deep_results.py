"""The answers of the tools that go deeper than a graph: run_pass (before/after counts and the proof's
verdict) and kernels (inductor's kernels and the source lines each fuses). Pure, like results.py."""

from __future__ import annotations

from typing_extensions import TypedDict

from fxlens.ops import is_view, packet
from fxlens.pass_report import PassReport
from fxlens.render import kernels as kernel_render
from fxlens.render.pass_text import headline
from fxlens.report import ClassReport, LevelResult

MOST_CHANGES = 200  # the changed nodes an answer lists; `changed_nodes` counts them all
MOST_DIFF_LINES = 400


class NodeChangeInfo(TypedDict):
    change: str  # removed | added | retargeted | changed
    name: str
    op: str
    target: str
    before: str  # retargeted: the target it had
    line: int | None
    detail: str


class PassResult(TypedDict):
    path: str
    class_name: str
    pass_name: str
    kind: str  # builtin | user
    nodes_before: int
    nodes_after: int
    counts_before: dict[str, int]  # opcode -> nodes
    counts_after: dict[str, int]
    verdict: str  # equal | close | changes results | quantized | not run
    why_not: str  # why the proof did not run
    first_difference: str
    draws: int
    rtol: float
    atol: float
    tensors: str  # what both modules ran on
    changed_nodes: int
    changes: list[NodeChangeInfo]
    diff: str  # the printouts before → after, as a unified diff


def pass_result(report: PassReport) -> PassResult:
    proof = report.proof
    diff = report.diff.splitlines()
    if len(diff) > MOST_DIFF_LINES:
        diff = [*diff[:MOST_DIFF_LINES], f"… {len(diff) - MOST_DIFF_LINES} more lines"]
    return {
        "path": report.path,
        "class_name": report.class_name,
        "pass_name": report.pass_name,
        "kind": report.kind,
        "nodes_before": report.total_before,
        "nodes_after": report.total_after,
        "counts_before": dict(report.counts_before),
        "counts_after": dict(report.counts_after),
        "verdict": proof.verdict,
        "why_not": proof.why_not,
        "first_difference": proof.first_difference,
        "draws": proof.draws,
        "rtol": proof.rtol,
        "atol": proof.atol,
        "tensors": proof.tensors,
        "changed_nodes": len(report.changes),
        "changes": [
            {
                "change": c.change,
                "name": c.name,
                "op": c.op,
                "target": c.target,
                "before": c.before,
                "line": c.line,
                "detail": c.detail,
            }
            for c in report.changes[:MOST_CHANGES]
        ],
        "diff": "\n".join(diff),
    }


def pass_text(report: PassReport) -> str:
    text = headline(report)
    if report.proof.first_difference:
        text += f"; first difference: {report.proof.first_difference}"
    elif report.proof.why_not:
        text += f" ({report.proof.why_not})"
    return text


class KernelInfo(TypedDict):
    name: str
    kernel: str  # the generated function or library call (cpp_fused_add_relu_0, extern_kernels.addmm)
    kind: str  # fused | extern | fallback
    graph: int | None  # which compiled graph (a graph break makes several)
    lines: list[int]  # the source lines whose ops it computes
    line: int | None  # where it is listed: its first op that computes
    ops: list[str]  # the ATen ops it computes, views left out
    users: list[str]  # the kernels that read what it writes


class KernelsResult(TypedDict):
    path: str
    class_name: str
    device: str
    graphs: int
    kernel_count: int
    counts: dict[str, int]  # kind -> kernels
    kernels: list[KernelInfo]


def kernels_result(path: str, cls: ClassReport, result: LevelResult) -> KernelsResult:
    found = kernel_render.kernels(result)
    return {
        "path": path,
        "class_name": cls.name,
        "device": kernel_render.device_text(result),
        "graphs": result.graphs or 1,
        "kernel_count": len(found),
        "counts": kernel_render.counts(result),
        "kernels": [
            {
                "name": node.name,
                "kernel": node.target,
                "kind": (node.kernel or {})["kind"],
                "graph": node.graph,
                "lines": list((node.kernel or {})["lines"]),
                "line": node.line,
                "ops": list(dict.fromkeys(packet(op) for op in (node.kernel or {})["ops"] if not is_view(op))),
                "users": list(node.users),
            }
            for node in found
        ],
    }


def kernels_text(result: KernelsResult) -> str:
    head = f"{result['class_name']}: {result['kernel_count']} kernels ({result['device']})"
    rows = [
        f"{k['kernel']} [{k['kind']}] lines {kernel_render.ranges(k['lines']) or '?'}: {', '.join(k['ops'][:6])}"
        for k in result["kernels"]
    ]
    return "\n".join([head, *rows])

"""One runner for every pass, built-in or the user's: trace the class at the fx level as fxlens does,
run the pass on a copy, diff before → after, then prove (or disprove) that the outputs are unchanged.

Runs in the disposable trace child (analysis/analyse.py hands it the built examples).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from fxlens import lines as line_model
from fxlens import pass_catalog
from fxlens.messages import PassRequest
from fxlens.pass_report import PassInfo, PassReport
from fxlens.report import Diagnostic, Span
from fxlens.worker.failures.classify import classify, whole_line
from fxlens.worker.failures.limits import MAX_CPU_ELEMENTS
from fxlens.worker.levels import fx as trace_fx
from fxlens.worker.passes import TABLE, diff, proof, quantize, user
from fxlens.worker.passes.provenance import recording


@dataclass
class Target:
    """What the pass runs on: the class's example and where its file's lines are."""

    example: Any  # building.Example, or the Diagnostic(s) saying why the class was not built
    class_name: str
    path: str
    lines: list[str]
    class_span: Span
    namespace: dict  # the model file's globals (a pass defined next to the model is there)
    execution: str = "safe"


def info_for(request: PassRequest, model_path: str) -> PassInfo:
    """The pass a request names: a built-in, or the user's function (in the request's file)."""
    name = request.name
    if request.kind != "user":
        return pass_catalog.builtin(name) or PassInfo(name, "builtin")
    path = os.path.abspath(request.path or model_path)
    text = request.text
    found = (
        next((p for p in pass_catalog.user_passes(path, text) if p.name == name), None)
        if isinstance(text, str)
        else None
    )
    return found or PassInfo(name, "user", path=path, line=1)


def real_module(example: Any) -> tuple[torch.nn.Module | None, str]:
    """The instance with real CPU weights (its CPU rebuild when it was built on meta), or why there is none."""
    instance = example.instance
    tensors = [*instance.parameters(), *instance.buffers()]
    if not any(t.device.type == "meta" for t in tensors):
        return instance, ""
    elements = sum(t.numel() for t in tensors)
    if elements > MAX_CPU_ELEMENTS:
        return None, (
            f"the module has {elements / 1e6:.0f} M parameter elements, too many to build on the CPU "
            f"for the proof (limit {MAX_CPU_ELEMENTS // 1_000_000} M)"
        )
    if example.rebuild is None:
        return None, "fxlens cannot rebuild this instance on the CPU"
    try:
        with torch.random.fork_rng():
            torch.manual_seed(proof.SEED)  # the same initial weights each run (levels/devices.py seeds alike)
            return example.rebuild(), ""
    except Exception as error:  # noqa: BLE001  the user's constructor on the CPU: said, not raised
        return None, f"rebuilding it on the CPU failed: {proof.first_line(error)}"


def _graph(module: torch.nn.Module, example: Any, path: str) -> fx.GraphModule:
    concrete = trace_fx.unpassed_constants(module, example.inputs, example.kwargs) if example.inputs is not None else {}
    return trace_fx.trace(module, path, concrete)


def _resolve(info: PassInfo, target: Target, request: PassRequest) -> Callable:
    if info.kind == "builtin":
        return TABLE[info.name]
    namespace = target.namespace
    if os.path.abspath(info.path or "") != target.path:
        namespace = user.load_file(info.path or "", request.text or "", target.execution)
    found = user.find(info, namespace)
    if found is None:
        raise LookupError(f"no function `{info.name}` in {os.path.basename(info.path or '')}")
    return found


def run(request: PassRequest, target: Target) -> PassReport:
    started = time.perf_counter()
    info = info_for(request, target.path)
    report = PassReport(
        info.name,
        info.kind,
        target.class_name,
        target.path,
        quantization=info.quantization,
        pass_path=info.path or target.path,
        pass_line=info.line or target.class_span.line,
    )
    user_lines = _lines(request, target) if info.kind == "user" else target.lines
    where = user.def_span(info, user_lines) if info.kind == "user" else target.class_span
    example = target.example
    if info.kind == "builtin" and info.name not in TABLE:
        report.diagnostics.append(
            user.diagnostic(
                where, "error", "pass-unknown", f"no built-in pass {info.name!r} (built-ins: {', '.join(TABLE)})"
            )
        )
        return _timed(report, started)
    if not hasattr(example, "instance"):
        report.diagnostics += _not_built(example, target)
        return _timed(report, started)
    module, why_not = real_module(example)
    try:
        original = _graph(module if module is not None else example.instance, example, target.path)
    except Exception as error:  # noqa: BLE001  the user's forward failing to trace: said as the fx level says it
        report.diagnostics.append(classify(error, target.path, target.lines, "trace", "fx", target.class_span))
        return _timed(report, started)
    inputs = trace_fx.by_placeholder(original, example)[0] if example.inputs is not None else None
    if inputs is None:
        why_not = why_not or "fxlens has no example inputs for this class"
    try:
        pass_fn = _resolve(info, target, request)
    except Exception as error:  # noqa: BLE001  the pass's file or factory raising: a diagnostic
        report.diagnostics.append(
            user.raised(error, info, user_lines)
            if info.kind == "user"
            else user.diagnostic(where, "error", "pass-error", proof.first_line(error))
        )
        return _timed(report, started)
    work = copy.deepcopy(original)
    if inputs is not None:
        work.meta[quantize.EXAMPLE_INPUTS] = proof.draw(inputs, torch.Generator().manual_seed(proof.SEED))
    held = diff.held_values(work)  # what its nodes reach: a module the pass replaces is another object after
    try:
        with recording(work, info.name):
            returned = pass_fn(work)
    except Exception as error:  # noqa: BLE001  the user's pass raising: a diagnostic
        report.diagnostics.append(user.raised(error, info, user_lines))
        return _timed(_before_only(report, original), started)
    result = work if returned is None else returned
    if not isinstance(result, fx.GraphModule):
        report.diagnostics.append(
            user.diagnostic(
                where,
                "error",
                "pass-result",
                f"the pass returned a {type(result).__name__}, not a torch.fx.GraphModule (or None)",
                fix="Return the GraphModule you changed, a new one, or None after changing `gm`.",
            )
        )
        return _timed(_before_only(report, original), started)
    try:
        result.graph.lint()
    except Exception as error:  # noqa: BLE001  the graph the pass left failing lint: a diagnostic
        report.diagnostics.append(
            user.diagnostic(
                where,
                "error",
                "pass-lint",
                f"graph.lint() fails after the pass: {proof.first_line(error)}",
                "The graph the pass left is not well formed: "
                "a node uses a value defined after it or erased, or its target does not exist.",
                "Call `gm.graph.lint()` at the end of the pass to see where it breaks.",
            )
        )
        return _timed(_before_only(report, original), started)
    result.recompile()
    _fill(report, original, result, held)
    report.ok = True
    if not report.changes and report.diff == "":
        report.diagnostics.append(
            user.diagnostic(
                where,
                "hint",
                "pass-no-change",
                f"the pass `{info.name}` changes nothing in {target.class_name}'s graph",
                fix="Check what the pass matches: print `gm.graph` to see the node ops and targets it meets.",
            )
        )
    if module is None or inputs is None:
        report.proof = proof.not_run(why_not)
    else:
        report.proof = _proved(original, result, inputs, info)
    return _timed(report, started)


def _proved(original: fx.GraphModule, result: fx.GraphModule, inputs: tuple, info: PassInfo):
    try:
        found = proof.prove(original, result, inputs, info.quantization)
    except Exception as error:  # noqa: BLE001  the transformed module does not run: that is the verdict
        failed = proof.not_run(f"running the modules failed: {proof.first_line(error)}")
        failed.verdict = "changes results"
        failed.first_difference = failed.why_not
        return failed
    if info.quantization:  # the draws calibrated the observers: what int8 would change
        try:
            found.converted = proof.prove(original, quantize.converted(result), inputs, True)
        except Exception as error:  # noqa: BLE001  e.g. no quantized engine in this build of torch
            found.converted = proof.not_run(f"convert_fx failed: {proof.first_line(error)}")
    return found


def _fill(report: PassReport, original: fx.GraphModule, result: fx.GraphModule, held: dict[str, Any]) -> None:
    report.counts_before, report.counts_after = diff.counts(original), diff.counts(result)
    report.nodes_before = diff.report_nodes(original, {})
    report.nodes_after = diff.report_nodes(result, {n.name: n for n in report.nodes_before})
    report.changes = diff.changes(original, result, held)
    report.diff = diff.printout_diff(original, result)
    report.code_after = result.code


def _before_only(report: PassReport, original: fx.GraphModule) -> PassReport:
    report.counts_before = diff.counts(original)
    report.nodes_before = diff.report_nodes(original, {})
    return report


def _lines(request: PassRequest, target: Target) -> list[str]:
    text = request.text
    return line_model.split(text) if isinstance(text, str) else target.lines


def _not_built(example: Any, target: Target) -> list[Diagnostic]:
    if isinstance(example, Diagnostic):
        return [example]
    if isinstance(example, list):
        return list(example)
    span = whole_line(target.class_span.line, target.lines)
    return [
        Diagnostic.at(
            span,
            "error",
            "construction",
            f"fxlens cannot build {target.class_name}: {example}",
            level="pass",
        )
    ]


def _timed(report: PassReport, started: float) -> PassReport:
    report.seconds = time.perf_counter() - started
    return report

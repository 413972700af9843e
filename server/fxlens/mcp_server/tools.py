"""The tools, each a short handler: read the file (inside the roots), ask the engine, shape the answer.

A tool answers with structured content and a short text, or with an error (`isError`) whose text names the
line: a file that does not load, a class that does not exist, a level torch could not trace, a trace that
hung or crashed. The server lives on through all of them.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from mcp_types import CallToolResult, TextContent

from fxlens.ci.findings import findings as file_findings
from fxlens.engine.fixes import all_fixes, fix_by_id
from fxlens.engine.fixes import apply_fix as applied_text
from fxlens.engine.worker_client import TraceOptions
from fxlens.fix_report import StaleFix, unified_diff
from fxlens.lines import split
from fxlens.mcp_server import deep_results, fix_results, results
from fxlens.mcp_server.workspace import LOG, STOPPED, ToolProblem, Workspace
from fxlens.messages import PassRequest
from fxlens.pass_catalog import all_passes, builtin, user_passes
from fxlens.render.kernels import LEVEL as KERNEL_LEVEL
from fxlens.report import DEEP_LEVELS, DEFAULT_LEVELS, LEVELS, ClassReport, FileReport

DEFAULT_PAGE = 200  # nodes a graph answer holds at most, unless the call asks for another page size
MOST_PAGE = 2000


def answer(structured: Any, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=dict(structured))


def refusal(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _stopped_text(report: FileReport) -> str | None:
    """The trace hung, crashed or ran out of memory: where, in the words of the worker's postmortem."""
    for d in report.all_diagnostics():
        if d.severity == "error" and d.category in STOPPED:
            where = f"{d.class_name}: " if d.class_name else ""
            return f"{where}the trace did not end ({d.category}) at line {d.line}: {d.message}" + (
                f" (fix: {d.fix})" if d.fix else ""
            )
    return None


def _file_problem(report: FileReport) -> str | None:
    """The file itself cannot be read or run: a syntax error, or a top level that raised with no class traced."""
    for d in report.diagnostics:
        if d.category == "syntax" or (d.category == "load" and d.severity == "error" and not report.classes):
            return f"the file failed to {'parse' if d.category == 'syntax' else 'load'} at line {d.line}: " + (
                d.message + (f" (fix: {d.fix})" if d.fix else "")
            )
    return None


def _checked(report: FileReport) -> FileReport:
    problem = _stopped_text(report) or _file_problem(report)
    if problem:
        raise ToolProblem(problem)
    return report


def _class(report: FileReport, name: str, path: str) -> ClassReport:
    found = report.find_class(name)
    if found is None:
        names = ", ".join(report.module_classes or [c.name for c in report.classes]) or "none"
        raise ToolProblem(f"no Module class {name!r} in {path} (it has: {names})")
    return found


async def list_modules(workspace: Workspace, path: str) -> CallToolResult:
    source = workspace.source(path)
    report = _checked(await workspace.report(source, workspace.options()))
    result = results.list_modules(source.path, report)
    return answer(result, results.list_modules_text(result))


def _graph_levels(level: str) -> tuple[str, ...]:
    if level not in LEVELS:
        raise ToolProblem(f"no level {level!r}: the levels are {', '.join(LEVELS)}")
    # a cheap level comes with the others (one trace answers list_modules and every class's graph); a deep
    # one is traced alone, for the class asked about
    return DEFAULT_LEVELS if level in DEFAULT_LEVELS else (level,)


async def graph(
    workspace: Workspace, path: str, class_name: str, level: str, page: tuple[int, int, str]
) -> CallToolResult:
    levels = _graph_levels(level)
    offset, limit, _ = page
    if offset < 0 or not 0 < limit <= MOST_PAGE:
        raise ToolProblem(f"offset must be 0 or more and limit between 1 and {MOST_PAGE}")
    source = workspace.source(path)
    deep = level in DEEP_LEVELS
    report = _checked(await workspace.report(source, workspace.options(levels), class_name if deep else None))
    cls = _class(report, class_name, source.path)
    result = cls.levels.get(level)
    if result is None:
        raise ToolProblem(f"{class_name} has no {level} level in this report")
    if not result.ok:
        failure = results.failure_text(result.diagnostics) or result.note
        raise ToolProblem(f"{class_name}: the {level} level could not be traced: {failure}")
    shaped = results.graph(source.path, source.text, cls, level, page)
    return answer(shaped, results.graph_text(shaped))


async def findings(workspace: Workspace, path: str) -> CallToolResult:
    source = workspace.source(path)
    # the options `fxlens check` traces with: the same findings, in the same words
    report = await workspace.report(source, workspace.options(surface="check", cost=False))
    found = file_findings(source.path, report.all_diagnostics(), split(source.text))
    result = results.findings(source.path, found)
    stopped = _stopped_text(report)
    if stopped:
        # the findings hold the stopped trace too; the error says the answer is partial
        return CallToolResult(
            content=[TextContent(type="text", text=stopped)], structured_content=dict(result), is_error=True
        )
    return answer(result, results.findings_text(result))


def _pass_request(path: str, text: str, name: str) -> PassRequest:
    if builtin(name):
        return PassRequest(name, "builtin")
    if any(p.name == name for p in user_passes(path, text)):
        return PassRequest(name, "user", path, text)
    names = ", ".join(p.name for p in all_passes(path, text))
    raise ToolProblem(
        f"no pass {name!r} (there are: {names}); a function of the file becomes one with a `# fxlens: pass` "
        "comment above its `def`"
    )


async def run_pass(workspace: Workspace, path: str, class_name: str, pass_name: str) -> CallToolResult:
    source = workspace.source(path)
    report, found = await workspace.run_pass(source, class_name, _pass_request(source.path, source.text, pass_name))
    _checked(report)
    if found is None:
        _class(report, class_name, source.path)
        raise ToolProblem(f"{pass_name} did not run: {results.failure_text(report.all_diagnostics()) or 'no report'}")
    if not found.ok:
        raise ToolProblem(
            f"{pass_name} on {class_name} failed: {results.failure_text(found.diagnostics) or 'no graph came back'}"
        )
    return answer(deep_results.pass_result(found), deep_results.pass_text(found))


async def kernels(workspace: Workspace, path: str, class_name: str) -> CallToolResult:
    source = workspace.source(path)
    report = _checked(await workspace.report(source, workspace.options((KERNEL_LEVEL,)), class_name))
    cls = _class(report, class_name, source.path)
    result = cls.levels.get(KERNEL_LEVEL)
    if result is None or not result.ok:
        failure = (results.failure_text(result.diagnostics) or result.note) if result else "not traced"
        raise ToolProblem(f"{class_name}: torch.compile's kernels could not be made: {failure}")
    shaped = deep_results.kernels_result(source.path, cls, result)
    return answer(shaped, deep_results.kernels_text(shaped))


def _fix_options(workspace: Workspace) -> TraceOptions:
    # `fxlens check --fix`'s: the same fixes, proven the same way, in the same words
    return replace(workspace.options(surface="check", cost=False), fixes=True)


async def fixes(workspace: Workspace, path: str) -> CallToolResult:
    source = workspace.source(path)
    report = _checked(await workspace.report(source, _fix_options(workspace)))
    lines = split(source.text)
    found = []
    for fix in all_fixes(report):
        try:
            after = applied_text(source.text, fix) if fix.proven else None
        except StaleFix:
            after = None
        found.append(fix_results.fix_info(source.path, source.text, lines, fix, after))
    result: fix_results.FixesResult = {
        "path": source.path,
        "proven": sum(f["proven"] for f in found),
        "fixes": found,
    }
    return answer(result, fix_results.fixes_text(result))


async def apply_fix(workspace: Workspace, path: str, fix_id: str) -> CallToolResult:
    """The proven fix written to the file: found again in the file's report as it stands (traced anew when the
    file changed since `fixes`), its edits refused if the text no longer holds what they replace."""
    source = workspace.source(path)
    report = _checked(await workspace.report(source, _fix_options(workspace)))
    fix = fix_by_id(report, fix_id)
    if fix is None:
        ids = ", ".join(f.id for f in all_fixes(report) if f.proven) or "none"
        raise ToolProblem(
            f"no fix {fix_id!r} in {source.path} as it stands (its proven fixes: {ids}); call fixes again"
        )
    if not fix.proven:
        raise ToolProblem(f"fix {fix_id} is not offered: {fix.why_not()}")
    try:
        after = applied_text(source.text, fix)
    except StaleFix as stale:
        raise ToolProblem(f"fix {fix_id} no longer applies: {stale}; call fixes again") from stale
    with open(source.path, "w", encoding="utf-8", newline="") as handle:
        handle.write(after)
    diff = unified_diff(os.path.basename(source.path), source.text, after)
    result: fix_results.AppliedResult = {"path": source.path, "id": fix.id, "label": fix.label(), "diff": diff}
    return answer(result, f"applied {fix.id} to {source.path}: {fix.label()}")


async def guarded(call: Any) -> CallToolResult:
    """A tool's answer, or its problem as an error result: nothing a tool meets ends the server."""
    try:
        result: CallToolResult = await call
        return result
    except ToolProblem as problem:
        return refusal(str(problem))
    except Exception as error:  # noqa: BLE001  a bug of ours is an answer too, with its words, never a lost server
        LOG.exception("a tool call failed")
        return refusal(f"fxlens could not answer: {type(error).__name__}: {error}")

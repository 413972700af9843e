"""The tools' answers: a report turned into the structured content an agent reads (typed: the SDK publishes
these TypedDicts as each tool's output schema) and one short line of text.

Pure: report data in, plain data out. Lines are 1-based and columns 1-based characters, as editors show
them (the report's columns are 0-based UTF-8 bytes; `ci/findings.py` and `lsp/positions.py` convert).
"""

from __future__ import annotations

from typing_extensions import TypedDict

from fxlens.ci.findings import Finding
from fxlens.lines import split
from fxlens.lsp.positions import character_column
from fxlens.report import ClassReport, Diagnostic, FileReport, LevelResult, Node

# (pydantic reads these at run time to build the output schemas: typing_extensions' TypedDict, as it asks on 3.11)


class InputInfo(TypedDict):
    name: str
    shape: list[int | str] | None
    dtype: str | None
    value: str | None


class LevelSummary(TypedDict):
    level: str
    ok: bool
    node_count: int
    failure: str | None  # `line 12: message` when the level could not be traced


class ModuleInfo(TypedDict):
    name: str
    line: int
    end_line: int
    built: str  # directive | no-arguments | config | call-in-file | found | guessed | parent | unbuilt
    built_detail: str
    directive: str  # a `# fxlens:` expression that builds it and calls it as traced
    inputs: list[InputInfo]
    levels: list[LevelSummary]
    parameters: int | None
    forward_flops: int | None


class ListModulesResult(TypedDict):
    path: str
    classes: list[ModuleInfo]
    not_traced: list[str]  # Module classes of the file that no trace reached (abstract, or only built elsewhere)


class NodeInfo(TypedDict):
    index: int
    name: str
    op: str
    target: str
    overload: str | None
    shape: list[int | str] | None
    dtype: str | None
    value: str | None
    users: list[str]
    line: int | None
    column: int | None
    function: str | None
    module: str  # the submodule instance that made it ("blocks.0.fc"), "" for the class itself


class ModuleCount(TypedDict):
    module: str
    node_count: int
    first_index: int


class GraphResult(TypedDict):
    path: str
    class_name: str
    level: str
    node_count: int  # every node of the level, whatever the page
    matching: int  # the nodes the `module` filter kept (node_count without one)
    offset: int
    next_offset: int | None  # where the next page starts; None: this page is the last
    nodes: list[NodeInfo]
    modules: list[ModuleCount]  # node counts per submodule: the summary of a graph too large for one page


class FindingInfo(TypedDict):
    severity: str  # error | warning | information | hint
    line: int
    column: int
    end_line: int
    end_column: int
    category: str
    message: str
    explanation: str
    fix: str
    class_name: str | None
    levels: list[str]


class FindingsResult(TypedDict):
    path: str
    errors: int
    warnings: int
    findings: list[FindingInfo]


def failure_text(diagnostics: list[Diagnostic]) -> str | None:
    """`line 12: message (fix: ...)` of the first error, the words a failed level or a stopped trace gives."""
    errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
    if not errors:
        return None
    d = errors[0]
    return f"line {d.line}: {d.message}" + (f" (fix: {d.fix})" if d.fix else "")


def _level_summary(name: str, result: LevelResult) -> LevelSummary:
    return {
        "level": name,
        "ok": result.ok,
        "node_count": len(result.nodes),
        "failure": None if result.ok else failure_text(result.diagnostics) or result.note or "not traced",
    }


def module_info(cls: ClassReport) -> ModuleInfo:
    return {
        "name": cls.name,
        "line": cls.line,
        "end_line": cls.end_line,
        "built": cls.build.how,
        "built_detail": cls.build.detail,
        "directive": cls.build.directive,
        "inputs": [{"name": i.name, "shape": i.shape, "dtype": i.dtype, "value": i.value} for i in cls.build.inputs],
        "levels": [_level_summary(name, result) for name, result in cls.levels.items()],
        "parameters": cls.cost.parameters if cls.cost else None,
        "forward_flops": cls.cost.forward_flops if cls.cost else None,
    }


def list_modules(path: str, report: FileReport) -> ListModulesResult:
    traced = {c.name for c in report.classes}
    return {
        "path": path,
        "classes": [module_info(c) for c in report.classes],
        "not_traced": [name for name in report.module_classes if name not in traced],
    }


def list_modules_text(result: ListModulesResult) -> str:
    def one(m: ModuleInfo) -> str:
        counts = ", ".join(
            f"{s['level']} {s['node_count']} nodes" if s["ok"] else f"{s['level']} failed at {s['failure']}"
            for s in m["levels"]
        )
        return f"{m['name']} (line {m['line']}, built: {m['built']}): {counts}"

    classes = result["classes"]
    head = f"{len(classes)} Module class{'es' if len(classes) != 1 else ''} in {result['path']}"
    return "\n".join([head, *(one(m) for m in classes)])


def column(lines: list[str], line: int | None, byte_col: int | None) -> int | None:
    if line is None or byte_col is None:
        return None
    return character_column(lines, line, byte_col)


def node_info(index: int, node: Node, lines: list[str]) -> NodeInfo:
    return {
        "index": index,
        "name": node.name,
        "op": node.op,
        "target": node.target,
        "overload": node.overload,
        "shape": node.shape,
        "dtype": node.dtype,
        "value": node.value,
        "users": list(node.users),
        "line": node.line,
        "column": column(lines, node.line, node.col),
        "function": node.function,
        "module": node.scope,
    }


def _in_module(node: Node, module: str) -> bool:
    return not module or node.scope == module or node.scope.startswith(module + ".")


def module_counts(nodes: list[Node]) -> list[ModuleCount]:
    counts: dict[str, ModuleCount] = {}
    for index, node in enumerate(nodes):
        entry = counts.setdefault(node.scope, {"module": node.scope, "node_count": 0, "first_index": index})
        entry["node_count"] += 1
    return list(counts.values())


def graph(path: str, text: str, cls: ClassReport, level: str, page: tuple[int, int, str]) -> GraphResult:
    """One page of a traced level: `page` is (offset, limit, module filter)."""
    offset, limit, module = page
    nodes = cls.levels[level].nodes
    lines = split(text)
    kept = [(i, n) for i, n in enumerate(nodes) if _in_module(n, module)]
    shown = kept[offset : offset + limit]
    following = offset + len(shown)
    return {
        "path": path,
        "class_name": cls.name,
        "level": level,
        "node_count": len(nodes),
        "matching": len(kept),
        "offset": offset,
        "next_offset": following if following < len(kept) else None,
        "nodes": [node_info(i, n, lines) for i, n in shown],
        "modules": module_counts(nodes) if len(kept) > limit else [],
    }


def graph_text(result: GraphResult) -> str:
    shown = len(result["nodes"])
    text = f"{result['class_name']} at {result['level']}: {result['node_count']} nodes"
    if shown < result["matching"] or result["offset"]:
        text += f"; nodes {result['offset']}–{result['offset'] + shown - 1} shown"
        if result["next_offset"] is not None:
            text += f", call again with offset={result['next_offset']} for more"
    ops: dict[str, int] = {}
    for node in result["nodes"]:
        ops[node["op"]] = ops.get(node["op"], 0) + 1
    return text + " (" + ", ".join(f"{n} {op}" for op, n in ops.items()) + ")" if ops else text


def finding_info(f: Finding) -> FindingInfo:
    d = f.diagnostic
    return {
        "severity": d.severity,
        "line": d.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "category": d.category,
        "message": d.message,
        "explanation": d.explanation,
        "fix": d.fix,
        "class_name": d.class_name,
        "levels": list(f.whole.levels),
    }


def findings(path: str, found: list[Finding]) -> FindingsResult:
    return {
        "path": path,
        "errors": sum(f.diagnostic.severity == "error" for f in found),
        "warnings": sum(f.diagnostic.severity == "warning" for f in found),
        "findings": [finding_info(f) for f in found],
    }


def findings_text(result: FindingsResult) -> str:
    head = f"{result['errors']} error(s), {result['warnings']} warning(s) in {result['path']}"
    lines = [
        f"line {f['line']}:{f['column']} {f['severity']} [{f['category']}] {f['message']}"
        for f in result["findings"]
        if f["severity"] in ("error", "warning")
    ]
    return "\n".join([head, *lines])

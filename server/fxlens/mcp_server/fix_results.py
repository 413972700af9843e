"""The answers of `fixes` and `apply_fix`: each rewrite fxlens found for a finding, with its edits and the
proof the trace child made (re-traced, outputs and state compared), and what applying one changed. Pure,
like results.py; the edits are the editor's and `fxlens check --fix`'s (engine/fixes.py)."""

from __future__ import annotations

import os

from typing_extensions import TypedDict

from fxlens.fix_report import Fix, unified_diff
from fxlens.mcp_server.results import column


class EditInfo(TypedDict):
    line: int
    column: int  # 1-based characters, as the findings' columns
    end_line: int
    end_column: int
    new_text: str
    old_text: str  # what the range holds now: an edit whose text changed is refused


class LevelCheckInfo(TypedDict):
    level: str
    what: str  # what is counted: graph breaks (dynamo), failures (the others)
    before: int
    after: int
    new: list[str]  # findings the fixed text has that the original had not


class ProofInfo(TypedDict):
    proven: bool
    failed: str  # which check failed, in words; "" when proven
    levels: list[LevelCheckInfo]
    inputs: int  # the input sets both modules ran on
    modes: list[str]  # eval, and train where the outputs differ
    outputs: str  # equal | close | "" (not compared)
    max_abs_diff: float
    state_equal: bool


class FixInfo(TypedDict):
    id: str  # what apply_fix takes
    rule: str
    title: str
    label: str  # the title with its proof: "Replace with torch.where — fx failures 1 → 0, outputs equal on 3 inputs"
    proven: bool  # only a proven fix is applied
    why_not: str
    what: str  # what the rewrite does and what it costs
    class_name: str
    level: str
    category: str
    line: int
    column: int
    edits: list[EditInfo]
    proof: ProofInfo
    diff: str  # the file's unified diff with this fix alone ("" when not proven)


class FixesResult(TypedDict):
    path: str
    proven: int
    fixes: list[FixInfo]


class AppliedResult(TypedDict):
    path: str
    id: str
    label: str
    diff: str  # what was written


def _diff(path: str, text: str, after: str | None) -> str:
    return unified_diff(os.path.basename(path), text, after) if after is not None else ""


def fix_info(path: str, text: str, lines: list[str], fix: Fix, after: str | None) -> FixInfo:
    """One fix; `after`: the text with it applied (None: not proven, or no longer applies)."""
    proof = fix.proof
    return {
        "id": fix.id,
        "rule": fix.rule,
        "title": fix.title,
        "label": fix.label(),
        "proven": fix.proven,
        "why_not": fix.why_not(),
        "what": fix.what,
        "class_name": fix.class_name,
        "level": fix.level,
        "category": fix.category,
        "line": fix.line,
        "column": column(lines, fix.line, fix.col) or 1,
        "edits": [
            {
                "line": e.line,
                "column": column(lines, e.line, e.col) or 1,
                "end_line": e.end_line,
                "end_column": column(lines, e.end_line, e.end_col) or 1,
                "new_text": e.new_text,
                "old_text": e.old_text,
            }
            for e in fix.edits
        ],
        "proof": {
            "proven": proof.proven,
            "failed": proof.failed,
            "levels": [
                {"level": c.level, "what": c.what, "before": c.before, "after": c.after, "new": list(c.new)}
                for c in proof.levels
            ],
            "inputs": proof.inputs,
            "modes": list(proof.modes),
            "outputs": proof.outputs,
            "max_abs_diff": proof.max_abs_diff,
            "state_equal": proof.state_equal,
        },
        "diff": _diff(path, text, after),
    }


def fixes_text(result: FixesResult) -> str:
    fixes = result["fixes"]
    head = f"{result['proven']} proven fix(es) of {len(fixes)} found in {result['path']}"
    rows = [
        f"line {f['line']} [{f['id']}] {f['label']}" if f["proven"] else f"line {f['line']} not offered: {f['why_not']}"
        for f in fixes
    ]
    return "\n".join([head, *rows])

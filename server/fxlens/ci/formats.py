"""`fxlens check --format text|json|github|sarif`: the same findings for a terminal, a script, GitHub
Actions' workflow commands and code scanning."""
from __future__ import annotations

import json

from fxlens.ci.findings import Finding
from fxlens.ci.sarif import sarif_log
from fxlens.render.graph_text import diagnostic_line
from fxlens.report import to_json

FORMATS = ("text", "json", "github", "sarif")
# hints (a skipped top-level statement, a guessed constructor) are for the editor, not for a PR annotation
_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "information": "notice"}


def text_lines(findings: list[Finding]) -> list[str]:
    lines = []
    for f in findings:
        d = f.diagnostic
        where = f" ({d.class_name}, {d.level})" if d.class_name and d.level else ""
        lines.append(diagnostic_line(f.path, d) + where)
    return lines


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_lines(findings: list[Finding]) -> list[str]:
    """`::error file=…,line=…,col=…,endLine=…,endColumn=…,title=…::message` per finding."""
    lines = []
    for f in findings:
        d = f.diagnostic
        command = _GITHUB_COMMANDS.get(d.severity)
        if command is None:
            continue
        title = f"fxlens {d.category}" + (f" ({d.class_name}, {d.level})" if d.class_name and d.level else "")
        message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
        properties = {"file": f.path, "line": d.line, "col": f.column, "endLine": f.end_line,
                      "endColumn": f.end_column, "title": title}
        joined = ",".join(f"{k}={_escape_property(str(v))}" for k, v in properties.items())
        lines.append(f"::{command} {joined}::{_escape_data(message)}")
    return lines


def json_document(findings: list[Finding], summary: dict) -> dict:
    return {"diagnostics": [{"path": f.path, **to_json(f.diagnostic)} for f in findings], "summary": summary}


def render(kind: str, findings: list[Finding], summary: dict) -> str:
    if kind == "json":
        return json.dumps(json_document(findings, summary), indent=1)
    if kind == "sarif":
        return json.dumps(sarif_log(findings), indent=1)
    lines = github_lines(findings) if kind == "github" else text_lines(findings)
    return "\n".join(lines)

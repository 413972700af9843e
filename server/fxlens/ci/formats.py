"""`fxlens check --format text|json|github|sarif`: the same findings for a terminal, a script, GitHub
Actions' workflow commands and code scanning."""

from __future__ import annotations

import json
from typing import Any

from fxlens.ci.findings import Finding
from fxlens.ci.sarif import sarif_log
from fxlens.render.causes import plain, related_text
from fxlens.render.graph_text import diagnostic_line
from fxlens.report import to_json

FORMATS = ("text", "json", "github", "sarif")
# hints (a skipped top-level statement, a guessed constructor) are for the editor, not for a PR annotation
_GITHUB_COMMANDS = {"error": "error", "warning": "warning", "information": "notice"}


def _level_texts(f: Finding) -> list[str]:
    """A merged finding's levels, each with its own text (`aten: ...`); none for a single diagnostic."""
    cause = f.whole
    return [related_text(part, len(cause.classes)) for part in cause.parts] if cause.merged else []


def text_lines(findings: list[Finding], verbose: bool = False) -> list[str]:
    """One line per finding, `path:line:col: severity: message [category] (Class, level)`; a merged
    finding's levels follow, indented, so every line that starts with the path is one finding. `verbose`:
    fxlens's own failures are followed by their tracebacks, indented too."""
    lines = []
    for f in findings:
        where = f.whole.where()
        lines.append(diagnostic_line(f.path, f.diagnostic) + (f" ({where})" if where else ""))
        lines += [f"    {text}" for text in _level_texts(f)]
        lines += [
            f"    fix: {fix['label']}" if fix["proven"] else f"    no fix ({fix['title']}): {fix['why_not']}"
            for fix in f.fixes
        ]
        if verbose:
            lines += [f"    {line}" for text in tracebacks(f) for line in text.rstrip("\n").split("\n")]
    return lines


def tracebacks(f: Finding) -> list[str]:
    """The distinct tracebacks of a finding's diagnostics (a merged cause has one per level)."""
    found = [d.traceback for d in (f.diagnostic, *f.whole.parts) if d.traceback]
    return list(dict.fromkeys(found))


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
        where = f.whole.where()
        title = f"fxlens {d.category}" + (f" ({where})" if where else "")
        message = "\n".join([d.message, *_level_texts(f)]) + (f"\nfix: {d.fix}" if d.fix else "")
        properties = {
            "file": f.path,
            "line": d.line,
            "col": f.column,
            "endLine": f.end_line,
            "endColumn": f.end_column,
            "title": title,
        }
        joined = ",".join(f"{k}={_escape_property(str(v))}" for k, v in properties.items())
        lines.append(f"::{command} {joined}::{_escape_data(message)}")
    return lines


def _json(f: Finding) -> dict[str, Any]:
    """The report's fields (`level`: the first level of the ladder it holds for), then `levels` and, for a
    merged finding, each level's own diagnostic in `related` (with `plain`: torch's guard message in plain
    words, or null)."""
    cause = f.whole
    related = [{**to_json(part), "plain": plain(part)} for part in cause.parts] if cause.merged else []
    found = {"path": f.path, **to_json(f.diagnostic), "levels": list(cause.levels), "related": related}
    return {**found, "fixes": list(f.fixes)} if f.fixes else found


def json_document(findings: list[Finding], summary: dict[str, Any]) -> dict[str, Any]:
    return {"diagnostics": [_json(f) for f in findings], "summary": summary}


def render(kind: str, findings: list[Finding], summary: dict[str, Any], verbose: bool = False) -> str:
    if kind == "json":
        return json.dumps(json_document(findings, summary), indent=1)
    if kind == "sarif":
        return json.dumps(sarif_log(findings), indent=1)
    lines = github_lines(findings) if kind == "github" else text_lines(findings, verbose)
    return "\n".join(lines)

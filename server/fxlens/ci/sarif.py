"""SARIF 2.1.0 for code scanning: one rule per diagnostic category (its help is the explanation and
fix fxlens gives for it), one result per cause with its region, columns in characters; the levels a
merged cause holds for are its relatedLocations (the same region, each level's own text)."""

from __future__ import annotations

from typing import Any

from fxlens import __version__
from fxlens.ci.findings import Finding
from fxlens.render.causes import related_text

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}
INFORMATION_URI = "https://github.com/fxlens/fxlens"


def _rule(category: str, example: Finding) -> dict[str, Any]:
    d = example.diagnostic
    words = category.replace("-", " ").replace("/", " or ")
    help_text = "\n\n".join(filter(None, [d.explanation, f"Fix: {d.fix}" if d.fix else ""])) or words
    return {
        "id": category,
        "name": "".join(part.capitalize() for part in category.replace("/", "-").split("-")),
        "shortDescription": {"text": f"fxlens: {words}"},
        "fullDescription": {"text": d.explanation or f"torch tracing reported: {words}"},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": LEVELS.get(d.severity, "note")},
    }


def _location(f: Finding) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
            "region": {
                "startLine": f.diagnostic.line,
                "startColumn": f.column,
                "endLine": f.end_line,
                "endColumn": f.end_column,
            },
        }
    }


def _result(f: Finding, rule_index: int) -> dict[str, Any]:
    d, cause = f.diagnostic, f.whole
    text = d.message + (f"\nFix: {d.fix}" if d.fix else "")
    result: dict[str, Any] = {
        "ruleId": d.category,
        "ruleIndex": rule_index,
        "level": LEVELS.get(d.severity, "note"),
        "message": {"text": text},
        "locations": [_location(f)],
    }
    if cause.merged:
        result["relatedLocations"] = [
            {**_location(f), "id": index, "message": {"text": related_text(part, len(cause.classes))}}
            for index, part in enumerate(cause.parts)
        ]
    proven = [fix for fix in f.fixes if fix["proven"]]
    if proven:
        result["fixes"] = [_fix(f.path, fix) for fix in proven]
    named = (("class", ", ".join(cause.classes)), ("level", d.level), ("gb_id", d.gb_id))
    properties: dict[str, str | list[str]] = {k: v for k, v in named if v}
    if cause.merged:
        properties["levels"] = list(cause.levels)
    if properties:
        result["properties"] = properties
    return result


def _fix(path: str, fix: dict[str, Any]) -> dict[str, Any]:
    """A proven fix as SARIF's `fix`: its label (the proof) and its replacements, columns in characters."""
    replacements = [
        {
            "deletedRegion": {
                "startLine": e["line"],
                "startColumn": e["column"],
                "endLine": e["end_line"],
                "endColumn": e["end_column"],
            },
            "insertedContent": {"text": e["new_text"]},
        }
        for e in fix["edits"]
    ]
    return {
        "description": {"text": fix["label"]},
        "artifactChanges": [
            {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"}, "replacements": replacements}
        ],
        "properties": {"id": fix["id"], "rule": fix["rule"], "proof": fix["proof"]},
    }


def sarif_log(findings: list[Finding]) -> dict[str, Any]:
    rules: dict[str, int] = {}
    examples: list[Finding] = []
    for f in findings:
        if f.diagnostic.category not in rules:
            rules[f.diagnostic.category] = len(examples)
            examples.append(f)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fxlens",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(f.diagnostic.category, f) for f in examples],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the directory fxlens check ran in"}}},
                "results": [_result(f, rules[f.diagnostic.category]) for f in findings],
            }
        ],
    }

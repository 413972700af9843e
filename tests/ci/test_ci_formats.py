"""`fxlens check --format text|json|github|sarif` on the failure corpus: every format carries the same
findings, GitHub's workflow commands parse back to them, SARIF validates against the 2.1.0 schema."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from fxlens_command import ROOT, fxlens

CORPUS = [
    ROOT / "tests" / "fixtures" / "models" / "failures.py",
    *sorted((ROOT / "tests" / "fixtures" / "failures_real").glob("*.py")),
]
SCHEMA = (
    ROOT
    / ".ci"
    / "sarif-schema"
    / "node_modules"
    / "@microsoft"
    / "jest-sarif"
    / "lib"
    / "schemas"
    / "sarif-2.1.0-rtm.5.json"
)
COMMAND = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


def _unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@pytest.fixture(scope="module")
def formats(tmp_path_factory) -> dict:
    """The corpus checked once (json, traced), then in the other formats from the cache."""
    cache = tmp_path_factory.mktemp("cache")
    files = [str(p.relative_to(ROOT)) for p in CORPUS]
    out = {}
    for kind in ("json", "text", "github", "sarif"):
        run = fxlens("check", *files, "--format", kind, "--cache-dir", str(cache))
        assert run.returncode == 1, run.stderr  # the corpus has errors
        out[kind] = run.stdout
    return out


def test_json_is_one_object_per_diagnostic_with_the_report_fields(formats):
    data = json.loads(formats["json"])
    assert data["summary"]["files"] == len(CORPUS) and data["summary"]["errors"] > 0
    assert data["summary"]["traced"] == len(CORPUS)
    branch = next(
        d
        for d in data["diagnostics"]
        if d["path"] == "tests/fixtures/models/failures.py" and d["line"] == 14 and d["level"] == "fx"
    )
    assert (branch["col"], branch["severity"], branch["category"], branch["class_name"]) == (
        11,
        "error",
        "data-dependent-control-flow",
        "DataDependentIf",
    )
    assert branch["fix"] and branch["explanation"]


def test_text_keeps_the_check_lines(formats):
    lines = formats["text"].splitlines()
    # fx and aten fail at the same `if` for the same reason: one finding, each level's text beneath it
    at = lines.index(
        "tests/fixtures/models/failures.py:14:12: error: fx and aten cannot trace this data-dependent "
        "branch [data-dependent-control-flow] (DataDependentIf: fx, aten)"
    )
    assert lines[at + 1] == "    fx: TraceError: symbolically traced variables cannot be used as inputs to control flow"
    assert lines[at + 2].startswith("    aten: the branch depends on a value computed from the input (torch: ")
    assert len([line for line in lines if line.startswith("tests/")]) == len(json.loads(formats["json"])["diagnostics"])


def test_github_commands_parse_back_to_the_diagnostics(formats):
    diagnostics = [d for d in json.loads(formats["json"])["diagnostics"] if d["severity"] != "hint"]
    parsed = []
    for line in formats["github"].splitlines():
        match = COMMAND.match(line)
        assert match, line
        props = dict(item.split("=", 1) for item in match["props"].split(","))
        parsed.append((match[1], {k: _unescape(v) for k, v in props.items()}, _unescape(match["message"])))
    assert len(parsed) == len(diagnostics)
    for (command, props, message), d in zip(parsed, diagnostics):
        assert command == {"error": "error", "warning": "warning", "information": "notice"}[d["severity"]]
        assert props["file"] == d["path"] and int(props["line"]) == d["line"] and int(props["endLine"]) == d["end_line"]
        text = (ROOT / d["path"]).read_text().split("\n")[d["line"] - 1]
        assert int(props["col"]) == len(text.encode()[: d["col"]].decode(errors="ignore")) + 1
        assert d["category"] in props["title"]
        # a merged finding's message names each level's own text on a line of its own
        body = message.split("\nfix: ")[0]
        assert body.startswith(d["message"])
        levels = body[len(d["message"]) :].split("\n")[1:]
        assert [text.split(": ")[0] for text in levels] == [r["level"] for r in d["related"]]


def test_sarif_validates_against_the_2_1_0_schema(formats):
    assert SCHEMA.is_file(), "run `bash .ci/setup-sarif.sh` (npm) to fetch the SARIF schema"
    log = json.loads(formats["sarif"])
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    run = log["runs"][0]
    diagnostics = json.loads(formats["json"])["diagnostics"]
    assert len(run["results"]) == len(diagnostics)
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(dict.fromkeys(d["category"] for d in diagnostics))
    for result, d in zip(run["results"], diagnostics):
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"] == d["category"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == d["line"] >= 1 and region["startColumn"] >= 1
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == d["path"]
    branch = next(r for r in rules if r["id"] == "data-dependent-control-flow")
    assert "torch.where" in branch["help"]["text"]  # the fix a user applies

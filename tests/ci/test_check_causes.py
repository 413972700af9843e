"""`fxlens check` gives one finding per cause: a data-dependent `if` in a child's forward fails at fx and
aten and breaks dynamo's graph, for the child and for the parent that calls it, at one span. Every
format carries one finding there, with each class's and level's own text."""

from __future__ import annotations

import json

import pytest
from fxlens_command import ROOT, fxlens

FILE = "tests/fixtures/models/branch_in_child.py"
LEVELS = [arg for level in ("fx", "dynamo", "aten", "core-aten", "backward") for arg in ("--level", level)]
BRANCH = 15  # `if y.mean() > 0:` in Gate.forward
SUMMARY = (
    "fx and aten cannot trace this data-dependent branch; torch.compile breaks the graph here [GB0170] "
    "(in Gate and Stack)"
)


@pytest.fixture(scope="module")
def formats(tmp_path_factory) -> dict:
    cache = tmp_path_factory.mktemp("cache")
    out = {}
    for kind in ("json", "github", "sarif", "text"):  # traced once, then from the cache
        run = fxlens("check", FILE, *LEVELS, "--format", kind, "--cache-dir", str(cache))
        assert run.returncode == 1, run.stderr
        out[kind] = run.stdout
    return out


def test_json_has_one_finding_with_every_class_and_level_in_related(formats):
    found = [d for d in json.loads(formats["json"])["diagnostics"] if d["line"] == BRANCH]
    assert len(found) == 1
    (d,) = found
    assert (d["severity"], d["category"], d["gb_id"], d["message"]) == (
        "error",
        "data-dependent-control-flow",
        "GB0170",
        SUMMARY,
    )
    assert d["levels"] == ["fx", "dynamo", "aten"]
    assert [(r["class_name"], r["level"]) for r in d["related"]] == [
        ("Gate", "fx"),
        ("Stack", "fx"),
        ("Gate", "dynamo"),
        ("Stack", "dynamo"),
        ("Gate", "aten"),
        ("Stack", "aten"),
    ]
    aten = d["related"][-1]
    assert aten["message"].startswith("GuardOnDataDependentSymNode: Could not guard on data-dependent expression")
    assert aten["plain"] == "the branch depends on a value computed from the input"
    assert json.loads(formats["json"])["summary"]["errors"] == 1


def test_github_has_one_annotation(formats):
    lines = [line for line in formats["github"].splitlines() if f"line={BRANCH}," in line]
    assert len(lines) == 1
    assert lines[0].startswith(f"::error file={FILE},line={BRANCH},col=12,")
    assert "title=fxlens data-dependent-control-flow (Gate%2C Stack%3A fx%2C dynamo%2C aten)::" in lines[0]
    message = lines[0].split("::", 2)[2].split("%0A")
    assert message[0] == SUMMARY
    assert message[1] == "Gate · fx: TraceError: symbolically traced variables cannot be used as inputs to control flow"
    assert message[-1].startswith("fix: Compute both sides")


def test_sarif_has_one_result_with_related_locations(formats):
    run = json.loads(formats["sarif"])["runs"][0]
    results = [r for r in run["results"] if r["locations"][0]["physicalLocation"]["region"]["startLine"] == BRANCH]
    assert len(results) == 1
    (result,) = results
    assert result["level"] == "error" and result["ruleId"] == "data-dependent-control-flow"
    assert result["message"]["text"].split("\nFix: ")[0] == SUMMARY
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == list(range(6))
    assert all(r["physicalLocation"] == result["locations"][0]["physicalLocation"] for r in related)
    assert related[4]["message"]["text"].startswith(
        "Gate · aten: the branch depends on a value computed from the input"
    )
    assert result["properties"]["levels"] == ["fx", "dynamo", "aten"]
    schema = (
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
    if schema.is_file():  # (test_ci_formats.py requires it; here the shape is what matters)
        import jsonschema

        jsonschema.validate(json.loads(formats["sarif"]), json.loads(schema.read_text()))


def test_text_has_one_line_starting_with_the_path(formats):
    lines = [line for line in formats["text"].splitlines() if line.startswith(f"{FILE}:{BRANCH}:")]
    assert lines == [
        f"{FILE}:{BRANCH}:12: error: {SUMMARY} [data-dependent-control-flow] (Gate, Stack: fx, dynamo, aten)"
    ]

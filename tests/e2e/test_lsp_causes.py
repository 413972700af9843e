"""pytest-lsp end to end: one diagnostic per cause. A data-dependent `if` fails at fx, aten, core-aten and
backward and breaks dynamo's graph, all at one span: the editor gets one diagnostic there, each level's
own text in its relatedInformation, and levels computed on demand (a hover) change its words, never the
count."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

BRANCH = 13  # `if y.mean() > 0:` in Branchy.forward
DEEP = {"dynamo", "core-aten", "backward"}


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)  # the default levels: fx and aten; the deeper ones come on demand
    yield
    await lsp_client.shutdown_session()


def _at_branch(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.range.start.line == BRANCH - 1]


def _levels(d: types.Diagnostic) -> list[str]:
    return [info.message.split(": ")[0] for info in d.related_information or []]


def _published(client: LanguageClient, uri: str) -> list[list[types.Diagnostic]]:
    return [list(p.diagnostics) for p in client.fx.published if p.uri == uri]


async def test_a_data_dependent_branch_is_one_diagnostic_and_a_hover_adds_no_copies(client, tmp_path):
    doc = open_doc(client, "branchy.py", tmp_path)
    await doc.traced()
    (first,) = _at_branch(doc.diagnostics())
    assert first.message.startswith("fx and aten cannot trace this data-dependent branch\nfix: ")
    assert _levels(first) == ["fx", "aten"]
    assert first.severity == types.DiagnosticSeverity.Error and first.code == "data-dependent-control-flow"
    span = first.range
    assert all(info.location.uri == doc.uri and info.location.range == span for info in first.related_information)
    aten = first.related_information[1].message
    assert aten.startswith(
        "aten: the branch depends on a value computed from the input (torch: "
        "GuardOnDataDependentSymNode: Could not guard on data-dependent expression"
    ), aten

    # a hover on the `if` starts the deeper levels; they join the same diagnostic
    hover = await doc.hover(doc.at(BRANCH, "y.mean()"))
    assert "**fx and aten cannot trace this data-dependent branch** in Branchy" in hover
    assert "computing… hover again" in hover
    await client.fx.until(
        lambda: DEEP
        <= {
            level
            for r in client.fx.reports
            if r["uri"] == doc.uri and r["className"] == "Branchy"
            for level in r["levels"] or []
        },
        "the deeper levels of Branchy",
    )
    (merged,) = _at_branch(doc.diagnostics())
    assert merged.message.split("\nfix: ")[0] == (
        "fx, aten, core-aten and backward cannot trace this data-dependent "
        "branch; torch.compile breaks the graph here [GB0170]"
    )
    assert _levels(merged) == ["fx", "dynamo", "aten", "core-aten", "backward"]  # the ladder's order
    assert merged.range == span and merged.severity == types.DiagnosticSeverity.Error  # the worst of them
    assert merged.source == "fxlens (Branchy · fx, dynamo, aten, core-aten, backward)"
    # no publication ever held a second diagnostic there (nor a second error anywhere)
    every = _published(client, doc.uri)
    assert every and all(len(_at_branch(items)) <= 1 for items in every)
    assert all(sum(d.severity == types.DiagnosticSeverity.Error for d in items) <= 1 for items in every)

    # the hover says the same, each level's text once
    again = await doc.hover(doc.at(BRANCH, "y.mean()"))
    assert "computing" not in again
    assert again.count("fx, aten, core-aten and backward cannot trace this data-dependent branch") == 1
    assert "**aten, core-aten, backward:** the branch depends on a value computed from the input" in again
    assert again.count("GuardOnDataDependentSymNode") == 1
    assert "**dynamo:**" in again and "Data-dependent branching [GB0170]" in again
    assert len(_at_branch(doc.diagnostics())) == 1

"""pytest-lsp end to end: the deeper levels never delay fx/aten, levels nobody asked for are computed
on demand (a hover starts them, the graph view waits for one) and kept per class fingerprint."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import command, config, open_doc, start
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASKED = ["fx", "aten", "backward"]  # backward asked for in the settings; core-aten and dynamo not
HEAD_LINE = 22  # `y = self.out(x)` in Head.forward


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": ASKED})
    yield
    await lsp_client.shutdown_session()


def _arrivals(client: LanguageClient, uri: str) -> list[tuple]:
    """What reached the client for `uri`, in order: ("diagnostics",), or (class, level) per level arrived."""
    seen = []
    for kind, what in client.fx.sequence:
        if kind == "diagnostics" and what == uri:
            seen.append(("diagnostics",))
        elif kind == "report" and what["uri"] == uri and not what["complete"]:
            seen += [(what["className"], level) for level in what["levels"] or []]
    return seen


def _requested(info: dict, uri: str, name: str) -> list[list[str]]:
    return [r["levels"] for r in info["onDemand"] if r["uri"] == uri and r["class"] == name]  # (debugInfo's own keys)


async def _until_levels(client: LanguageClient, uri: str, name: str, level: str) -> None:
    await client.fx.until(
        lambda: any(
            r["uri"] == uri and r["className"] == name and level in (r["levels"] or []) for r in client.fx.reports
        ),
        f"{level} of {name}",
    )


async def test_every_class_gets_fx_and_aten_and_their_diagnostics_before_any_deeper_level(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    seen = _arrivals(client, doc.uri)
    cheap = [i for i, what in enumerate(seen) if what[1:] and what[1] in ("fx", "aten") and what[0]]
    deep = [i for i, what in enumerate(seen) if what[1:] == ("backward",) and what[0]]
    assert {seen[i] for i in cheap} == {(c, level) for c in ("Encoder", "Head") for level in ("fx", "aten")}
    assert {seen[i][0] for i in deep} == {"Encoder", "Head"}
    assert max(cheap) < min(deep)
    # the stage: every class has fx and aten (class None), and the diagnostics went out with it
    stage = seen.index((None, "fx"))
    assert max(cheap) < stage < min(deep)
    assert ("diagnostics",) in seen[max(cheap) : min(deep)]


async def test_a_hover_starts_the_levels_not_asked_for_and_a_later_hover_shows_them(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    first = await doc.hover(doc.at(HEAD_LINE, "self.out"))
    assert "backward: " in first  # asked for: traced with the file
    assert "dynamo, core-aten: computing… hover again" in first
    await _until_levels(client, doc.uri, "Head", "core-aten")
    again = await doc.hover(doc.at(HEAD_LINE, "self.out"))
    assert "computing" not in again
    assert "core-aten: 3 nodes (permute, addmm" in again or "core-aten: 2 nodes (permute, addmm" in again, again
    assert "dynamo: " in again
    info = await command(client, "fxlens.debugInfo")
    assert _requested(info, doc.uri, "Head") == [["dynamo", "core-aten"]]
    assert _requested(info, doc.uri, "Encoder") == []  # nobody hovered it


async def test_levels_computed_on_demand_last_as_long_as_the_class_fingerprint(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    await doc.hover(doc.at(HEAD_LINE, "self.out"))
    await _until_levels(client, doc.uri, "Head", "core-aten")
    # a trace of every class from scratch: Head is traced again (fx, aten, backward) with the same
    # fingerprint, and keeps its core-aten and dynamo levels without computing them again
    await command(client, "fxlens.retrace", doc.uri)
    info = await command(client, "fxlens.debugInfo")
    assert set(info["retraced"][doc.uri]) == {"Encoder", "Head"}
    kept = await doc.hover(doc.at(HEAD_LINE, "self.out"))
    assert "core-aten: " in kept and "computing" not in kept
    # an edit outside Head (inside Encoder): only Encoder is traced, Head keeps them too
    await doc.traced(doc.change(doc.text.replace("torch.tanh(self.fc(x))", "torch.tanh(self.fc(x)) * 2")))
    info = await command(client, "fxlens.debugInfo")
    assert info["retraced"][doc.uri] == ["Encoder"]
    kept = await doc.hover(doc.at(HEAD_LINE, "self.out"))
    assert "core-aten: " in kept and "computing" not in kept
    assert _requested(info, doc.uri, "Head") == [["dynamo", "core-aten"]]
    # an edit inside Head changes its fingerprint: what was computed for the old one is gone
    await doc.traced(doc.change(doc.text.replace("return y.sigmoid()", "return y.sigmoid() + 1")))
    info = await command(client, "fxlens.debugInfo")
    assert info["retraced"][doc.uri] == ["Head"]
    dropped = await doc.hover(doc.at(HEAD_LINE, "self.out"))
    assert "dynamo, core-aten: computing… hover again" in dropped
    info = await command(client, "fxlens.debugInfo")
    assert _requested(info, doc.uri, "Head") == [["dynamo", "core-aten"], ["dynamo", "core-aten"]]


async def test_the_graph_view_waits_for_a_level_nobody_asked_for(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    payload = await command(client, "fxlens.showGraph", doc.uri, "Encoder", "core-aten")
    assert payload["ok"] and payload["level"] == "core-aten"
    assert "aten.addmm.default" in payload["table"] and "aten.tanh.default" in payload["table"]
    assert payload["levels"] == ["fx", "aten", "core-aten", "backward"]  # the ladder's order

"""pytest-lsp end to end: "Run pass …" on a class line runs the pass through the worker and returns the
preview; a user pass edited into a bug gets its diagnostic in its own file, re-run without asking."""
from __future__ import annotations

import ast

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_harness import ROOT, Doc, command, config, start

pytestmark = pytest.mark.asyncio(loop_scope="module")
FIXTURE = ROOT / "tests" / "fixtures" / "passes" / "tinynet.py"
CLASS_LINE = 6  # `class TinyNet`


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _command_of(action) -> list:
    """[command, *arguments] of a code action. lsprotocol's client-side hook structures any object with a
    `command` key as a Command, so a CodeAction arrives as one whose `command` is its Command's repr."""
    if isinstance(action, types.CodeAction):
        return [action.command.command, *action.command.arguments]
    if action.arguments is not None:
        return [action.command, *action.arguments]
    inner = ast.literal_eval(action.command)
    return [inner["command"], *inner["arguments"]]


def _open(client: LanguageClient, tmp_path) -> Doc:
    path = tmp_path / FIXTURE.name
    path.write_text(FIXTURE.read_text())
    doc = Doc(client, path, path.read_text())
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=doc.uri, language_id="python", version=doc.version, text=doc.text)))
    return doc


async def test_run_pass_code_action_gives_the_preview(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path)
    await doc.traced()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        range=types.Range(start=doc.at(CLASS_LINE, "TinyNet"), end=doc.at(CLASS_LINE, "TinyNet")),
        context=types.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in actions]
    assert "Run pass fuse-linear-relu on TinyNet" in titles and "Run pass relu_to_sigmoid on TinyNet" in titles
    fuse = next(a for a in actions if a.title == "Run pass fuse-linear-relu on TinyNet")
    payload = await command(client, *_command_of(fuse))
    assert payload["ok"] and payload["verdict"] == "equal"
    assert "5 → 4 nodes" in payload["markdown"] and "added `fc1_relu`" in payload["markdown"]
    changes = {n["id"]: n["change"] for n in payload["graph"]["nodes"]}
    assert (changes["fc1"], changes["relu"], changes["fc1_relu"], changes["fc2"]) == ("removed", "removed", "added", None)
    assert payload["document"].endswith(".md")


async def test_user_pass_is_rerun_on_edit_with_diagnostics_in_its_file(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path)
    await doc.traced()
    payload = await command(client, "fxlens.runPass", doc.uri, "TinyNet", "relu_to_sigmoid", doc.uri)
    assert payload["verdict"] == "changes results" and "max |diff|" in payload["markdown"]
    # the user breaks the pass: it now erases the relu while fc2 still uses it
    broken = doc.text.replace("            node.target = torch.sigmoid", "            gm.graph.erase_node(node)")
    doc.change(broken)
    line = broken.split("\n").index("            gm.graph.erase_node(node)")
    found = await client.fx.until(lambda: [d for d in doc.diagnostics() if d.code == "pass-erased-used-node"],
                                  "the pass's diagnostic")
    assert found[0].range.start.line == line and found[0].severity == types.DiagnosticSeverity.Error

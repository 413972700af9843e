"""pytest-lsp end to end: "Run pass …" on a class line, or on a `# fxlens: pass` function's `def`, runs the
pass through the worker and returns the preview; a class fxlens cannot build gets no pass action; a user
pass edited into a bug gets its diagnostic in its own file, re-run without asking."""

from __future__ import annotations

import ast

import pytest
import pytest_lsp
from lsp_harness import ROOT, Doc, command, config, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
PASSES = ROOT / "tests" / "fixtures" / "passes"
FIXTURE = PASSES / "tinynet.py"
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


def _open(client: LanguageClient, tmp_path, fixture=FIXTURE) -> Doc:
    path = tmp_path / fixture.name
    path.write_text(fixture.read_text())
    doc = Doc(client, path, path.read_text())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=doc.version, text=doc.text)
        )
    )
    return doc


async def test_run_pass_code_action_gives_the_preview(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path)
    await doc.traced()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=doc.at(CLASS_LINE, "TinyNet"), end=doc.at(CLASS_LINE, "TinyNet")),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    titles = [a.title for a in actions]
    assert "Run pass fuse-linear-relu on TinyNet" in titles and "Run pass relu_to_sigmoid on TinyNet" in titles
    fuse = next(a for a in actions if a.title == "Run pass fuse-linear-relu on TinyNet")
    payload = await command(client, *_command_of(fuse))
    assert payload["ok"] and payload["verdict"] == "equal"
    assert "5 → 4 nodes" in payload["markdown"] and "added `fc1_relu`" in payload["markdown"]
    changes = {n["id"]: n["change"] for n in payload["graph"]["nodes"]}
    assert (changes["fc1"], changes["relu"], changes["fc1_relu"], changes["fc2"]) == (
        "removed",
        "removed",
        "added",
        None,
    )
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
    found = await client.fx.until(
        lambda: [d for d in doc.diagnostics() if d.code == "pass-erased-used-node"], "the pass's diagnostic"
    )
    assert found[0].range.start.line == line and found[0].severity == types.DiagnosticSeverity.Error


async def _actions_at(client: LanguageClient, doc: Doc, line: int, needle: str) -> list:
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=doc.at(line, needle), end=doc.at(line, needle)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )


def _line_of(doc: Doc, text: str) -> int:
    return next(i for i, line in enumerate(doc.lines, 1) if line.startswith(text))


async def test_a_pass_def_runs_it_on_the_classes_of_its_file(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path)
    await doc.traced()
    line = _line_of(doc, "def relu_to_sigmoid")
    actions = await _actions_at(client, doc, line, "relu_to_sigmoid")
    # one action per class of the file; a built-in is no business of a pass's def
    assert [a.title for a in actions] == ["Run pass relu_to_sigmoid on TinyNet"]
    name, *arguments = _command_of(actions[0])
    assert (name, arguments) == ("fxlens.runPass", [doc.uri, "TinyNet", "relu_to_sigmoid", doc.uri, True])
    payload = await command(client, name, *arguments)
    assert payload["verdict"] == "changes results" and payload["class"] == "TinyNet"
    doc.close()


async def test_a_pass_def_in_a_file_without_models_offers_the_open_files_classes(client: LanguageClient, tmp_path):
    model = _open(client, tmp_path)
    await model.traced()
    passes = _open(client, tmp_path, PASSES / "more_passes.py")
    await passes.traced()
    actions = await _actions_at(client, passes, _line_of(passes, "def drop_relu("), "drop_relu")
    ours = [a for a in actions if _command_of(a)[1] == model.uri]
    assert [a.title for a in ours] == ["Run pass drop_relu on TinyNet (tinynet.py)"]
    assert _command_of(ours[0]) == ["fxlens.runPass", model.uri, "TinyNet", "drop_relu", passes.uri, True]
    payload = await command(client, *_command_of(ours[0]))
    assert payload["ok"] and [c["name"] for c in payload["report"]["changes"]] == ["relu"]
    model.close()
    passes.close()


async def test_a_class_that_cannot_be_built_gets_no_pass_action(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path, PASSES / "unbuildable.py")
    await doc.traced()
    unbuilt = await _actions_at(client, doc, _line_of(doc, "class NeedsParts"), "NeedsParts")
    assert not [a for a in unbuilt if a.title.startswith("Run pass")]
    built = await _actions_at(client, doc, _line_of(doc, "class Head"), "Head")
    assert "Run pass fuse-linear-relu on Head" in [a.title for a in built]
    # the palette's picker hears the same: the class is listed, not runnable, with the reason
    found = await command(client, "fxlens.passChoices", doc.uri)
    classes = {c["name"]: c for c in found["classes"]}
    assert (classes["NeedsParts"]["runnable"], classes["Head"]["runnable"]) == (False, True)
    assert classes["NeedsParts"]["why"].startswith("fxlens cannot build NeedsParts") and classes["Head"]["why"] == ""
    assert [p["name"] for p in found["passes"]][:2] == ["dead-code", "fuse-linear-relu"]
    doc.close()


async def test_pass_choices_list_the_files_own_passes_with_their_file(client: LanguageClient, tmp_path):
    doc = _open(client, tmp_path)
    await doc.traced()
    found = await command(client, "fxlens.passChoices", doc.uri)
    assert found["classes"] == [{"name": "TinyNet", "runnable": True, "why": ""}]
    mine = next(p for p in found["passes"] if p["name"] == "relu_to_sigmoid")
    assert mine == {
        "name": "relu_to_sigmoid",
        "kind": "user",
        "what": "A pass that changes results: every relu becomes a sigmoid.",
        "passUri": doc.uri,
        "file": "tinynet.py",
    }
    assert (await command(client, "fxlens.passChoices", "file:///nowhere.py")) == {"classes": [], "passes": []}
    doc.close()

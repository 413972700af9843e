"""pytest-lsp end to end: a class fxlens has no graph for offers a code action that drafts its directive;
applied, the next trace builds the class from it and the diagnostic names the value left to fill in;
filled in, the class gets its aten graph."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import ROOT, Doc, config, inserted, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
FIXTURE = ROOT / "tests" / "fixtures" / "drafts" / "detect_head.py"


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _class_line(text: str, name: str) -> int:
    return text.split("\n").index(f"class {name}(nn.Module):") + 1


async def _actions(client: LanguageClient, doc: Doc, line: int) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=doc.at(line), end=doc.at(line)),
            context=types.CodeActionContext(diagnostics=doc.diagnostics()),
        )
    )
    return [a for a in found if getattr(a, "kind", None) == types.CodeActionKind.QuickFix]


async def test_the_drafted_directive_applied_names_what_to_fill_in(client: LanguageClient, tmp_path):
    doc = open_doc(client, FIXTURE, tmp_path)
    await doc.traced()
    line = _class_line(doc.text, "PointEncoder")
    summary = [lens.command.title for lens in await doc.lenses() if lens.range.start.line == line - 1][1]
    assert summary.endswith("aten guess failed") and "untraceable" not in summary
    hover = await doc.hover(doc.at(line, "PointEncoder"))
    assert "Guess failed" in hover and "fill in `batch`" in hover

    (action,) = await _actions(client, doc, line)
    assert action.title == "Draft a `# fxlens:` directive (fill in `batch`)"
    assert [d.code for d in action.diagnostics or []] == ["inputs"]
    (edit,) = action.edit.changes[doc.uri]
    assert edit.range.start.line == line - 1 and edit.new_text == "# fxlens: PointEncoder()(FILL_batch)\n"

    await doc.traced(doc.change(inserted(doc.text, edit)))
    await client.fx.until(lambda: any(d.code == "placeholder" for d in doc.diagnostics()), "the placeholder warning")
    (warning,) = [d for d in doc.diagnostics() if d.code == "placeholder"]
    assert warning.range.start.line == line - 1 and "`batch` of `PointEncoder.forward`" in warning.message
    assert not await _actions(client, doc, line + 1)  # the class has its directive now: the user's to edit

    filled = doc.text.replace("FILL_batch", "PointBatch(torch.randn(2, 16, 3), torch.randn(2, 16, 4))")
    await doc.traced(doc.change(filled))
    await client.fx.until(lambda: not any(d.code == "placeholder" for d in doc.diagnostics()), "no placeholder left")
    after = await doc.hover(doc.at(line + 1, "PointEncoder"))
    assert "built: directive" in after and "Guess failed" not in after


async def test_a_directive_without_inputs_is_completed_in_place(client: LanguageClient, tmp_path):
    path = tmp_path / "completed.py"
    text = FIXTURE.read_text().replace(
        "class PointEncoder(", "# fxlens: PointEncoder(feat_dim=4)\nclass PointEncoder(", 1
    )
    path.write_text(text)
    doc = Doc(client, path, text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=doc.version, text=doc.text)
        )
    )
    await doc.traced()
    line = _class_line(doc.text, "PointEncoder")
    (action,) = await _actions(client, doc, line)
    (edit,) = action.edit.changes[doc.uri]
    # the directive's own line rewritten: one directive above the class, never two
    assert edit.range.start == types.Position(line=line - 2, character=0)
    assert edit.range.end == types.Position(line=line - 2, character=len("# fxlens: PointEncoder(feat_dim=4)"))
    assert edit.new_text == "# fxlens: PointEncoder(feat_dim=4)(FILL_batch)"

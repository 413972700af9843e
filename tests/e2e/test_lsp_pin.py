"""pytest-lsp end to end: a class built from guessed arguments offers a code action that pins them as
a `# fxlens:` directive; applied, the next trace builds the class from that directive."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import ROOT, config, inserted, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
FIXTURE = ROOT / "tests" / "fixtures" / "building" / "decorated_guess.py"
CLASS_LINE = 13  # `class Mixer`, under its `@register` decorator


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_pinning_guessed_arguments_makes_them_a_directive(client: LanguageClient, tmp_path):
    doc = open_doc(client, FIXTURE, tmp_path)
    await doc.traced()
    await client.fx.until(lambda: any(d.code == "guessed" for d in doc.diagnostics()), "the guessed hint")
    before = await doc.hover(doc.at(CLASS_LINE, "Mixer"))
    assert "built: guessed" in before and "dim=64, depth=2, dropout=0.0" in before
    assert "built from guessed arguments" in [lens.command.title for lens in await doc.lenses()]

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=doc.at(CLASS_LINE, "Mixer"), end=doc.at(CLASS_LINE, "Mixer")),
            context=types.CodeActionContext(diagnostics=doc.diagnostics()),
        )
    )
    (action,) = [a for a in actions if getattr(a, "kind", None) == types.CodeActionKind.QuickFix]  # (others: passes)
    assert action.title == "Pin these arguments as a `# fxlens:` directive"
    assert [d.code for d in action.diagnostics] == ["guessed"]
    (edit,) = action.edit.changes[doc.uri]
    assert edit.range.start.line == CLASS_LINE - 2  # above the decorator
    assert edit.new_text == "# fxlens: Mixer(dim=64, depth=2, dropout=0.0)(torch.randn(2, 64))\n"

    await doc.traced(doc.change(inserted(doc.text, edit)))
    after = await doc.hover(doc.at(CLASS_LINE + 1, "Mixer"))
    assert "built: directive" in after and "guessed" not in after
    assert "built from guessed arguments" not in [lens.command.title for lens in await doc.lenses()]
    assert not [d for d in doc.diagnostics() if d.code == "guessed"]
    again = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=doc.at(CLASS_LINE + 1), end=doc.at(CLASS_LINE + 1)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not [a for a in again if getattr(a, "kind", None) == types.CodeActionKind.QuickFix]

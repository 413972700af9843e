"""pytest-lsp end to end: the editor's line model (old Mac line endings, form-feed page breaks, line
separators in strings), incremental edits below them, and where graph documents are written."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest
import pytest_lsp
from lsp_harness import command, config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = '''"""Widening blocks.\u2028See the paper, section 3."""
import torch
from torch import nn

\x0c
SEPARATOR = "a\x85b"

\x0c
# fxlens: Widen(width=32)(torch.randn(5, 8))
class Widen(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y) * 2
'''
FC_LINE, RETURN_LINE = 16, 17  # 1-based, as the editor counts (splitlines() would say 17 and 19)


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": ["fx"]})
    yield
    await lsp_client.shutdown_session()


def _position(text: str, line: int, needle: str) -> types.Position:
    line_text = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[line - 1]
    return types.Position(line=line - 1, character=line_text.index(needle))


def _errors(doc) -> list[types.Diagnostic]:
    return [d for d in doc.diagnostics() if d.severity == types.DiagnosticSeverity.Error]


@pytest.mark.parametrize("newline", ["\n", "\r"], ids=["unix", "old-mac"])
async def test_a_directive_below_page_breaks_builds_the_class_in_any_line_endings(client, tmp_path, newline):
    text = MODEL.replace("\n", newline)
    doc = open_doc(client, "two_models.py", tmp_path, text=text)
    doc.path.write_bytes(text.encode())
    await doc.traced()
    assert _errors(doc) == [] and not [d for d in doc.diagnostics() if d.code == "guessed"]
    hover = await doc.hover(_position(text, FC_LINE, "self.fc"))
    assert "call_module fc" in hover and "(5, 32) f32" in hover  # built by the directive, not a guess
    titles = {(lens.range.start.line, lens.command.title) for lens in await doc.lenses()}
    assert any(line == 9 and title.startswith("fx ") for line, title in titles), titles


async def test_incremental_edits_below_form_feeds_and_line_separators_keep_the_editors_text(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path, text=MODEL)
    await doc.traced()
    start_at = _position(MODEL, RETURN_LINE, "relu")
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(start_at, types.Position(start_at.line, start_at.character + len("relu"))), text="sigmoid"
    )
    doc.version += 1
    doc.text = MODEL.replace("torch.relu(y)", "torch.sigmoid(y)")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[edit],
        )
    )
    await doc.traced()
    assert _errors(doc) == []
    hover = await doc.hover(_position(doc.text, RETURN_LINE, "torch.sigmoid"))
    assert "sigmoid" in hover and "relu" not in hover


async def test_a_graph_document_never_follows_a_symlink_planted_by_another_user(client, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("not fxlens's\n")
    victim.chmod(0o600)
    planted = os.path.join(tempfile.gettempdir(), f"fxlens-graphs-{os.getuid()}")  # where fxlens used to write
    os.makedirs(planted, exist_ok=True)
    link = os.path.join(planted, "two_models.Widen.fx.txt")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(victim, link)
    try:
        doc = open_doc(client, "two_models.py", tmp_path, text=MODEL)
        await doc.traced()
        shown = await command(client, "fxlens.showGraph", doc.uri, "Widen", "fx", True)
    finally:
        os.unlink(link)
    assert victim.read_text() == "not fxlens's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    path = shown["document"][len("file://") :]
    assert "call_module" in open(path).read() or "fc" in open(path).read()
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700

"""pytest-lsp end to end: a finding's proven fix is a preferred quick fix whose title carries its proof,
"Fix all proven in file" answers `source.fixAll`, a finding with no fix says why, and the editor's edits are
the very edits `fxlens check --fix` makes. In a notebook, the fix lands in the cell that holds it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_lsp
from fxlens_command import fxlens
from lsp_harness import ROOT, Doc, capabilities, config
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
GATES = ROOT / "tests" / "fixtures" / "fixes" / "gates.py"
WHERE_TITLE = "Replace with torch.where — fx failures 1 → 0, aten failures 1 → 0, outputs equal on 3 inputs"


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    caps = capabilities()
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=caps, workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(ROOT)), name="fxlens")]
        )
    )
    yield
    await lsp_client.shutdown_session()


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """LSP edits (ASCII text: UTF-16 columns are characters) made from the last to the first."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = starts[edit.range.start.line] + edit.range.start.character
        end = starts[edit.range.end.line] + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
    return text


async def _actions(client: LanguageClient, uri: str, line: int, diagnostics, only=None) -> list[types.CodeAction]:
    position = types.Position(line=line - 1, character=8)
    return await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=position, end=position),
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )


async def test_quick_fix_carries_its_proof_and_fix_all_makes_the_cli_s_edits(client: LanguageClient, tmp_path):
    path = tmp_path / "gates.py"
    shutil.copy(GATES, path)
    doc = Doc(client, path, path.read_text())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=1, text=doc.text)
        )
    )
    await doc.traced()
    await client.fx.until(
        lambda: any("fxlens can fix it" in d.message for d in doc.diagnostics()), "a diagnostic naming its fix"
    )
    at_if = [d for d in doc.diagnostics() if d.range.start.line == 16]
    assert at_if and f"fxlens can fix it (proven: {WHERE_TITLE})." in at_if[0].message
    counting = next(d for d in doc.diagnostics() if d.range.start.line == 47)
    assert "`Use torch.cond` is not offered: a branch changes module state (`self.opened`)" in counting.message

    actions = await _actions(client, doc.uri, 17, at_if)
    (quick,) = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert quick.title == WHERE_TITLE and quick.is_preferred and list(quick.diagnostics) == at_if
    (edit,) = quick.edit.changes[doc.uri]
    assert edit.new_text == "out = torch.where(h.mean() > 0, x + h, x - 0.5 * h)"
    assert (edit.range.start.line, edit.range.end.line) == (16, 19)
    assert not [a for a in await _actions(client, doc.uri, 48, [counting]) if a.kind == types.CodeActionKind.QuickFix]

    (fix_all,) = await _actions(client, doc.uri, 1, [], only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.title == "Fix all proven in file (2 fixes, each proven)"
    editor_text = _apply(doc.text, fix_all.edit.changes[doc.uri])
    cli_copy = tmp_path / "cli"
    cli_copy.mkdir()
    shutil.copy(GATES, cli_copy / "gates.py")
    run = fxlens("check", "--fix", "--no-cache", "--level", "fx", "--level", "aten", "gates.py", cwd=cli_copy)
    assert "2 fixed" in run.stderr, run.stderr
    assert editor_text == (cli_copy / "gates.py").read_text()


IMPORTS = "import torch\nfrom torch import nn"
GATE_CELL = GATES.read_text().split("\n\n\nclass FloorScale")[0].split("\n\n\n", 1)[1]


async def test_a_notebook_cell_gets_its_fix_in_its_own_lines(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "gates.ipynb"
    uri = from_fs_path(str(path))
    cells = [(f"vscode-notebook-cell:{path}#C{index}", text) for index, text in enumerate([IMPORTS, GATE_CELL])]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell) for cell, _ in cells],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell, language_id="python", version=1, text=text) for cell, text in cells
            ],
        )
    )
    gate_uri, gate_text = cells[1]
    record = client.fx  # type: ignore[attr-defined]
    await record.until(
        lambda: any(r["uri"] == uri and r["complete"] for r in record.reports), "the notebook's complete report"
    )
    line = next(i for i, text in enumerate(gate_text.split("\n"), 1) if "if h.mean() > 0:" in text)
    diagnostics = await record.until(
        lambda: [d for d in client.diagnostics.get(gate_uri, []) if "fxlens can fix it" in d.message] or None,
        "the cell's diagnostic naming its fix",
    )
    actions = await _actions(client, gate_uri, line, diagnostics)
    (quick,) = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert quick.title == WHERE_TITLE
    (edit,) = quick.edit.changes[gate_uri]  # the cell's own uri, in the cell's own lines
    assert edit.range.start.line == line - 1
    fixed = _apply(gate_text, [edit])
    assert "        out = torch.where(h.mean() > 0, x + h, x - 0.5 * h)\n        return torch.relu(out)" in fixed

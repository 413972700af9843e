"""pytest-lsp end to end: a Jupyter notebook's code cells get lenses, hovers and diagnostics in the
cells themselves, from a real server and worker, through notebookDocument sync (as VS Code sends it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsp_harness import ROOT, capabilities, command, config
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

IMPORTS = """import torch
from torch import nn
from dataclasses import dataclass
%matplotlib inline
!pip install einops"""

CONFIG = """@dataclass
class Config:
    width: int = 16
    depth: int = 2"""

NET = """# fxlens: Net(Config())(torch.randn(2, 16))
class Net(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(cfg.width, cfg.width) for _ in range(cfg.depth))

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x"""

HEAD = """class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(x).softmax(-1)"""

NOTES = "# A model\nThe config lives in its own cell."


class Cell:
    def __init__(self, notebook: Notebook, index: int, kind: str, text: str) -> None:
        self.notebook, self.kind, self.text, self.version = notebook, kind, text, 1
        self.uri = f"vscode-notebook-cell:{notebook.path}#C{index}"

    def item(self) -> types.TextDocumentItem:
        language = "python" if self.kind == "code" else "markdown"
        return types.TextDocumentItem(uri=self.uri, language_id=language, version=self.version, text=self.text)

    def cell(self) -> types.NotebookCell:
        kind = types.NotebookCellKind.Code if self.kind == "code" else types.NotebookCellKind.Markup
        return types.NotebookCell(kind=kind, document=self.uri)

    def at(self, line: int, needle: str = "") -> types.Position:
        """LSP position of `needle` on the cell's 1-based `line`."""
        text = self.text.split("\n")[line - 1]
        return types.Position(line=line - 1, character=text.index(needle) if needle else 0)

    async def lenses(self) -> list[types.CodeLens]:
        return await self.notebook.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    async def hover(self, position: types.Position) -> str | None:
        result = await self.notebook.client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=self.uri), position=position)
        )
        return result.contents.value if result is not None else None

    def diagnostics(self) -> list[types.Diagnostic]:
        return list(self.notebook.client.diagnostics.get(self.uri, []))


class Notebook:
    """A notebook open in the test client, changed the way VS Code's language client changes it."""

    def __init__(self, client: LanguageClient, path: Path, cells: list[tuple[str, str]]) -> None:
        self.client, self.path, self.version = client, path, 1
        self.uri = from_fs_path(str(path))
        self.cells = [Cell(self, index, kind, text) for index, (kind, text) in enumerate(cells)]

    def open(self) -> None:
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=self.version,
                    cells=[c.cell() for c in self.cells],
                ),
                cell_text_documents=[c.item() for c in self.cells],
            )
        )

    def _change(self, change: types.NotebookDocumentChangeEvent) -> int:
        self.version += 1
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(version=self.version, uri=self.uri),
                change=change,
            )
        )
        return self.version

    def edit(self, cell: Cell, text: str) -> int:
        cell.text, cell.version = text, cell.version + 1
        return self._change(
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cell.uri, version=cell.version),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            )
        )

    def move(self, source: int, target: int) -> int:
        """Move the cell at index `source` to index `target`: one array change over the span."""
        moved = self.cells.pop(source)
        self.cells.insert(target, moved)
        start, end = min(source, target), max(source, target)
        return self._change(
            types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    structure=types.NotebookDocumentCellChangeStructure(
                        array=types.NotebookCellArrayChange(
                            start=start,
                            delete_count=end - start + 1,
                            cells=[c.cell() for c in self.cells[start : end + 1]],
                        )
                    )
                )
            )
        )

    def close(self) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[types.TextDocumentIdentifier(uri=c.uri) for c in self.cells],
            )
        )

    async def traced(self, version: int | None = None) -> None:
        version = self.version if version is None else version
        record = self.client.fx  # type: ignore[attr-defined]
        await record.until(
            lambda: any(r["uri"] == self.uri and r["version"] == version and r["complete"] for r in record.reports),
            f"complete report of {self.path.name} v{version}",
        )

    async def debug(self) -> dict:
        return await command(self.client, "fxlens.debugInfo")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    caps = capabilities()
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=caps, workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(ROOT)), name="fxlens")]
        )
    )
    selector = result.capabilities.notebook_document_sync.notebook_selector
    assert [(s.notebook, [c.language for c in s.cells]) for s in selector] == [("jupyter-notebook", ["python"])]
    yield
    await lsp_client.shutdown_session()


def model_notebook(client: LanguageClient, tmp_path: Path) -> Notebook:
    return Notebook(
        client,
        tmp_path / "model.ipynb",
        [("code", IMPORTS), ("markdown", NOTES), ("code", CONFIG), ("code", NET), ("code", HEAD)],
    )


def titles(lenses: list[types.CodeLens]) -> set[tuple[int, str]]:
    return {(lens.range.start.line, lens.command.title) for lens in lenses}


async def test_lenses_and_hovers_in_the_cells(client: LanguageClient, tmp_path):
    book = model_notebook(client, tmp_path)
    imports, _notes, config_cell, net, head = book.cells
    book.open()
    await book.traced()
    lenses = await net.lenses()
    # the class line is the cell's line 2 (the directive is line 1): index 1
    assert any(line == 1 and title.startswith("fx 6 · ") for line, title in titles(lenses)), lenses
    graph = [lens.command for lens in lenses if lens.command.title == "Show graph"]
    assert [list(c.arguments) for c in graph] == [[net.uri, "Net", "fx"]]
    assert {line for line, _ in titles(await head.lenses())} == {0}
    assert not await config_cell.lenses() and not await imports.lenses()
    # magics neither break the parse nor run; the markdown cell is no code
    assert not any(d.code == "syntax" for c in book.cells for d in c.diagnostics())

    text = await net.hover(net.at(9, "block(x)"))
    assert "call_module blocks.0" in text and "call_module blocks.1" in text and "torch.relu" in text, text
    assert "aten.linear.default" in text and "aten.relu.default" in text
    assert "line 9" in text  # the cell's own line number, not the module's
    assert await config_cell.hover(config_cell.at(3, "width")) is None

    shown = await command(client, "fxlens.showGraph", net.uri, "Net", "fx")
    linear = [n for n in shown["graph"]["nodes"] if n["op"] == "call_module"]
    assert shown["uri"] == net.uri and {n["line"] for n in linear} == {9}, linear
    book.close()


async def test_a_data_dependent_if_in_a_cell(client: LanguageClient, tmp_path):
    book = model_notebook(client, tmp_path)
    net = book.cells[3]
    book.open()
    await book.traced()
    branched = NET.replace(
        "    def forward(self, x):\n", "    def forward(self, x):\n        if x.sum() > 0:\n            x = -x\n"
    )
    await book.traced(book.edit(net, branched))
    errors = [d for d in net.diagnostics() if d.code == "data-dependent-control-flow"]
    assert errors and {d.range.start.line for d in errors} == {7}, net.diagnostics()
    assert net.text.split("\n")[7].strip() == "if x.sum() > 0:"
    assert not [d for c in book.cells if c is not net for d in c.diagnostics() if d.severity == 1]
    # only the class whose cell changed was traced again: Head's fingerprint did not move
    assert (await book.debug())["retraced"][book.uri] == ["Net"]
    hover = await net.hover(net.at(8, "if"))
    assert "symbolically traced variables cannot be used as inputs to control flow" in hover
    book.close()


async def test_moving_cells_keeps_positions(client: LanguageClient, tmp_path):
    book = model_notebook(client, tmp_path)
    imports, notes, config_cell, net, head = book.cells
    book.open()
    await book.traced()
    # the class cost comes after the trace: the lens compared is the one that has it (waited for by the cost's
    # own report, which may arrive while a lens request is in flight)
    await client.fx.until(
        lambda: any(r["uri"] == book.uri and r["className"] == "Head" and r["cost"] for r in client.fx.reports),
        "Head's cost",
    )
    before = titles(await head.lenses())
    assert any("FLOP" in title for _, title in before), before
    version = book.move(4, 2)  # Head goes above the config cell
    assert [c.uri for c in book.cells] == [imports.uri, notes.uri, head.uri, config_cell.uri, net.uri]
    # before the next trace: the results carried over follow each cell
    assert titles(await head.lenses()) == before
    assert any(line == 1 and title.startswith("fx 6 · ") for line, title in titles(await net.lenses()))
    await book.traced(version)
    assert titles(await head.lenses()) == before
    text = await head.hover(head.at(7, "self.out"))
    assert "call_module out" in text and "softmax" in text, text
    text = await net.hover(net.at(9, "block(x)"))
    assert "call_module blocks.0" in text
    # nothing to retrace: the cells moved, no class's code changed
    assert (await book.debug())["retraced"][book.uri] == []
    book.close()
    await client.fx.until(lambda: all(not c.diagnostics() for c in book.cells), "diagnostics cleared on close")


async def test_a_skipped_statement_in_an_earlier_cell(client: LanguageClient, tmp_path):
    sizes = "for width in (8, 16):\n    WIDTH = width\nplt_show = print\nplt_show('trained')"
    uses = (
        "class Wide(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(WIDTH, WIDTH)\n\n    def forward(self, x):\n        return self.fc(x)"
    )
    book = Notebook(client, tmp_path / "skipped.ipynb", [("code", IMPORTS), ("code", sizes), ("code", uses)])
    _imports, loop, wide = book.cells
    book.open()
    await book.traced()
    hints = {(d.range.start.line, d.code) for d in loop.diagnostics()}
    assert (0, "not-executed") in hints and (3, "not-executed") in hints, loop.diagnostics()
    failed = [d for d in wide.diagnostics() if "WIDTH" in d.message]
    assert failed and failed[0].range.start.line == 3, wide.diagnostics()
    assert "`WIDTH` is set by a top-level loop, which fxlens did not run" in failed[0].message
    book.close()


async def test_lines_quoted_in_a_message_are_the_cell_s(client: LanguageClient, tmp_path):
    model = (
        "# fxlens: Scaled(factor=2)(torch.randn(2, 8))\nclass Scaled(nn.Module):\n"
        "    def __init__(self, factor):\n        super().__init__()\n        self.factor = factor * SCALE\n\n"
        "    def forward(self, x):\n        return x * self.factor"
    )
    book = Notebook(client, tmp_path / "quoted.ipynb", [("code", IMPORTS), ("code", model)])
    _imports, cell = book.cells
    book.open()
    await book.traced()
    # raised in __init__ (the cell's line 5), called from the directive (its line 1): both said in the cell's lines
    by_line = {d.range.start.line: d.message for d in cell.diagnostics()}
    assert "(from the `# fxlens:` directive at line 1)" in by_line[4], by_line
    assert "(raised at line 5)" in by_line[0], by_line
    book.close()


ENCODER = """class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(7, 16)

    def forward(self, batch):
        return self.embed(torch.cat([batch.coords, batch.feats], -1))"""


async def test_a_class_without_a_graph_in_a_cell_gets_its_drafted_directive(client: LanguageClient, tmp_path):
    book = Notebook(client, tmp_path / "drafted.ipynb", [("code", IMPORTS), ("markdown", NOTES), ("code", ENCODER)])
    cell = book.cells[2]
    book.open()
    await book.traced()
    assert any(line == 0 and title.endswith("· aten guess failed") for line, title in titles(await cell.lenses()))
    hover = await cell.hover(cell.at(1, "Encoder"))
    assert "Guess failed" in hover and "fill in `batch` (first used by Linear (7 features))" in hover
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cell.uri),
            range=types.Range(start=cell.at(1), end=cell.at(1)),
            context=types.CodeActionContext(diagnostics=cell.diagnostics()),
        )
    )
    (action,) = [a for a in found if getattr(a, "kind", None) == types.CodeActionKind.QuickFix]
    assert action.title == "Draft a `# fxlens:` directive (fill in `batch`)"
    (edit,) = action.edit.changes[cell.uri]  # the cell's own document, at the cell's first line
    assert edit.range.start == edit.range.end == types.Position(line=0, character=0)
    assert edit.new_text == "# fxlens: Encoder()(FILL_batch)\n"
    await book.traced(book.edit(cell, edit.new_text + cell.text))
    (warning,) = [d for d in cell.diagnostics() if d.code == "placeholder"]
    assert warning.range.start.line == 0 and "`batch` of `Encoder.forward`" in warning.message
    book.close()

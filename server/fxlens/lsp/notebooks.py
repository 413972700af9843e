"""notebookDocument/didOpen|didChange|didClose: a Jupyter notebook's Python code cells as one module.

pygls keeps the notebook and its cells' texts in the workspace; here each version of the notebook
becomes its virtual module (engine/notebook.py), traced like a file. Requests then arrive for a cell's
URI: `FxlensServer.document` finds the notebook's Document and `FxlensServer.coords` the cell's
converters (lsp/cells.py). fxlens never talks to the notebook's kernel: the worker runs the module
under the execution policy, like a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from fxlens.engine.notebook import VirtualModule, virtual_module
from fxlens.lsp import diagnostics

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

JUPYTER = "jupyter-notebook"
SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(notebook=JUPYTER, cells=[types.NotebookCellLanguage(language="python")])
    ]
)


def _code_cells(ls: FxlensServer, notebook: types.NotebookDocument) -> Iterator[tuple[str, str]]:
    """(uri, text) of the Python code cells in page order; markdown, raw and other languages are not code."""
    texts = ls.workspace.text_documents
    for cell in notebook.cells:
        text = texts.get(unquote(cell.document))
        if cell.kind == types.NotebookCellKind.Code and text is not None and text.language_id in (None, "python"):
            yield cell.document, text.source


def _module(ls: FxlensServer, uri: str) -> VirtualModule:
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    return virtual_module(_code_cells(ls, notebook) if notebook is not None else ())


def on_did_open(ls: FxlensServer, params: types.DidOpenNotebookDocumentParams) -> None:
    notebook = params.notebook_document
    book = ls.notebooks.open(
        notebook.uri, to_fs_path(notebook.uri) or notebook.uri, notebook.version, _module(ls, notebook.uri)
    )
    ls.scheduler.schedule(book.doc, delay=0.0)


def on_did_change(ls: FxlensServer, params: types.DidChangeNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    book = ls.notebooks.change(uri, params.notebook_document.version, _module(ls, uri))
    if book is None:
        return
    cells = params.change.cells
    if cells is not None and cells.structure is not None and book.doc.last is not None:
        diagnostics.publish(ls, book.doc)  # cells added, moved or deleted: no result may stay at an old place
    ls.scheduler.schedule(book.doc)


def on_did_close(ls: FxlensServer, params: types.DidCloseNotebookDocumentParams) -> None:
    book = ls.notebooks.close(params.notebook_document.uri)
    if book is None:
        return
    ls.scheduler.cancel(book.doc)
    ls.hooks.progress.ended(book.doc)
    for uri in sorted(book.published | {c.uri for c in params.cell_text_documents}):
        diagnostics.clear(ls, uri)

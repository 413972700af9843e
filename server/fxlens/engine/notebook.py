"""A notebook as the engine traces it: its code cells, in order, form one virtual module.

The virtual module is what the notebook's kernel would have run top to bottom (Jupyter's order of
execution is the user's business; the order on the page is the one a reader sees), with IPython-only
lines made inert (engine/magics.py). It is traced like any buffer, as a file beside the notebook, so
its imports resolve from the notebook's folder as Jupyter's do. Cells keep their own identity (their
URI) here, which is what lets results carried across an edit follow a cell that moved
(`CellLineMap`); turning module positions into cell positions is lsp/cells.py's job.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote

from fxlens import lines as line_model
from fxlens.engine.documents import Document, Documents
from fxlens.engine.magics import neutralise
from fxlens.engine.shift import LineMap, LineMapping

# module texts remembered per notebook for carrying results across edits (last, good, partial, current)
REMEMBERED_TEXTS = 8


@dataclass(frozen=True)
class CellSpan:
    uri: str  # as the client sent it (diagnostics go back to exactly this URI)
    start: int  # the 1-based module line of the cell's first line
    lines: tuple[str, ...]  # the cell's own text, line by line, as the editor has it
    module_lines: tuple[str, ...]  # the same lines as the worker sees them (magics made inert)

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1

    def holds(self, line: int) -> bool:
        return self.start <= line <= self.end


@dataclass(frozen=True)
class VirtualModule:
    text: str
    cells: tuple[CellSpan, ...]

    def cell_at(self, line: int) -> CellSpan | None:
        return next((c for c in self.cells if c.holds(line)), None)

    def nearest_cell(self, line: int) -> CellSpan | None:
        """The cell holding `line`; the first or last cell for a line before or after them all."""
        if not self.cells:
            return None
        if line < self.cells[0].start:
            return self.cells[0]
        return self.cell_at(line) or self.cells[-1]

    def cell(self, uri: str) -> CellSpan | None:
        key = unquote(uri)
        return next((c for c in self.cells if unquote(c.uri) == key), None)


def virtual_module(cells: Iterable[tuple[str, str]]) -> VirtualModule:
    """The module of the code cells `(uri, text)`, in order: each cell starts on a line of its own."""
    spans, texts, start = [], [], 1
    for uri, text in cells:
        inert = neutralise(text)
        span = CellSpan(uri, start, tuple(line_model.split(text)), tuple(line_model.split(inert)))
        spans.append(span)
        texts.append(inert)
        start = span.end + 1
    return VirtualModule("\n".join(texts), tuple(spans))


def virtual_path(notebook_path: str) -> str:
    """`analysis.ipynb` is traced as `analysis.ipynb.py`: beside the notebook (its folder is where its
    imports resolve), and a name no `import` can reach, so `import analysis` still finds analysis.py."""
    return notebook_path + ".py"


class CellLineMap(LineMapping):
    """LineMap between two versions of a notebook's module that follows each cell by its URI: a cell
    that moved keeps its results at its new place; a cell's own edits map like a file's."""

    def __init__(self, old: VirtualModule, new: VirtualModule) -> None:
        self.identity = old.text == new.text
        self._lines: dict[int, int] = {}
        for cell in old.cells:
            now = new.cell(cell.uri)
            if now is None:
                continue
            matcher = difflib.SequenceMatcher(None, cell.module_lines, now.module_lines, autojunk=False)
            for block in matcher.get_matching_blocks():
                for k in range(block.size):
                    self._lines[cell.start + block.a + k] = now.start + block.b + k

    def line(self, line: int | None) -> int | None:
        if line is None or self.identity:
            return line
        return self._lines.get(line)


@dataclass
class Notebook:
    uri: str
    doc: Document
    module: VirtualModule
    # module text -> the cells it was made of, for the texts the document's reports were traced from
    seen: dict[str, VirtualModule] = field(default_factory=dict)
    # cell URIs that were sent diagnostics: a cell that leaves the notebook has them cleared
    published: set[str] = field(default_factory=set)

    def line_map(self, old_text: str, new_text: str) -> LineMapping:
        old, new = self.seen.get(old_text), self.seen.get(new_text)
        if old is None or new is None:
            return LineMap(old_text, new_text)
        return CellLineMap(old, new)

    def remember(self, module: VirtualModule) -> None:
        self.module = module
        self.seen.pop(module.text, None)
        self.seen[module.text] = module
        doc = self.doc
        held = {module.text, doc.partial_text, *(t.text for t in (doc.last, doc.good) if t is not None)}
        for text in [t for t in self.seen if t not in held][:-REMEMBERED_TEXTS]:
            del self.seen[text]


class Notebooks:
    """The open notebooks, each one engine Document (keyed by the notebook's URI) plus its cells."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents
        self._books: dict[str, Notebook] = {}

    def open(self, uri: str, path: str, version: int, module: VirtualModule) -> Notebook:
        doc = self.documents.open(uri, virtual_path(path), version, module.text)
        doc.importable = False  # no other buffer can import a notebook
        book = self._books.get(unquote(uri))
        if book is None:
            book = self._books[unquote(uri)] = Notebook(uri, doc, module)
        doc.line_map = book.line_map
        book.remember(module)
        return book

    def change(self, uri: str, version: int, module: VirtualModule) -> Notebook | None:
        book = self._books.get(unquote(uri))
        if book is None:
            return None
        book.remember(module)
        book.doc.edit(version, module.text)
        return book

    def close(self, uri: str) -> Notebook | None:
        book = self._books.pop(unquote(uri), None)
        if book is not None:
            self.documents.close(book.doc.uri)
        return book

    def get(self, uri: str) -> Notebook | None:
        return self._books.get(unquote(uri))

    def of_cell(self, uri: str) -> tuple[Notebook, CellSpan] | None:
        for book in self._books.values():
            cell = book.module.cell(uri)
            if cell is not None:
                return book, cell
        return None

    def of_document(self, doc: Document) -> Notebook | None:
        book = self._books.get(unquote(doc.uri))
        return book if book is not None and book.doc is doc else None

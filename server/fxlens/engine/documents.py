"""What the server knows about each open buffer: its text, its reports, and a view valid for its text.

Three report sources meet here: the last complete trace (`last`), the last trace whose text parsed
(`good`: kept through a syntax error so hovers and lenses survive mid-edit), and the classes of the
trace in flight (`partial`, streamed in as the worker finishes each class). `view()` merges them
into one FileReport whose coordinates are valid for the *current* text. Each edit carries the line
map of every text a report comes from by that edit's own blocks (engine/line_diff.py `edit_blocks`),
so no edit diffs or splits whole texts: a 5 MB buffer's edit costs ~1 ms, not ~30.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property

from fxlens.engine.line_diff import changed_span, edit_blocks
from fxlens.engine.parsing import cheap_outline, cheap_parse, too_big_to_parse
from fxlens.engine.shift import BlockMap, LineMap, LineMapping, shift_class, shift_diagnostics
from fxlens.line_index import LineIndex
from fxlens.outline import Outline
from fxlens.report import ClassReport, FileReport


@dataclass
class Traced:
    version: int
    text: str
    report: FileReport
    # the TraceOptions it was traced with: different options invalidate every class
    options: object | None = None
    # WorkspaceContext.key of the trace: other buffers changed since means the worker must look again
    workspace_context: str = ""

    @property
    def parsed(self) -> bool:
        return not any(d.category == "syntax" for d in self.report.diagnostics)


@dataclass(frozen=True)
class WorkspaceContext:
    """What a buffer's trace imports besides its own text: the importable roots (workspace folders)
    and the text of every other open Python buffer (path -> text), which the worker imports instead
    of those files on disk."""

    roots: tuple[str, ...] = ()
    buffers: tuple[tuple[str, str], ...] = ()

    @cached_property  # hashing every open buffer's text (5 MB: ~10 ms) once per trace, not per look
    def key(self) -> str:
        if not self.roots and not self.buffers:
            return ""
        digest = hashlib.sha256()
        for part in (*self.roots, "", *(p for item in self.buffers for p in item)):
            digest.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
        return digest.hexdigest()


def _parses(text: str) -> bool:
    # a text too big to check on the event loop counts as parsing: its importer's trace says if not
    return too_big_to_parse(text) or cheap_parse(text) is not None


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)


@dataclass
class View:
    report: FileReport
    version: int
    # the classes come from an older text that no longer parses: positions shifted, maybe outdated
    stale: bool = False
    traced: bool = False


@dataclass
class Document:
    uri: str
    path: str
    version: int
    text: str
    last: Traced | None = None
    good: Traced | None = None
    partial: dict[str, ClassReport] = field(default_factory=dict)
    partial_text: str = ""
    cursor_line: int | None = None
    task: asyncio.Task[None] | None = None
    # versions whose trace completed, oldest first (debugging and the fast-typing test)
    history: list[int] = field(default_factory=list)
    _view: View | None = None
    # whether the text of version `_checked_version` parses (checked when another buffer imports it)
    _checked_version: int | None = None
    _text_parses: bool = False
    # False for a notebook's virtual module: no other buffer imports it
    importable: bool = True
    # how lines move between two texts when the buffer has its own rule (a notebook follows its cells
    # by identity); else `line_map` carries them through the edits
    _own_line_map: Callable[[str, str], LineMapping] | None = None
    _index: LineIndex | None = None
    # (older text, how its lines moved into the current text) for each text a report held comes
    # from: carried through every edit by that edit's own blocks, so no edit diffs whole texts
    _carried: list[tuple[str, BlockMap]] = field(default_factory=list)
    # (text, its outline) of the last texts outlined: whether an edit needs a trace compares the held trace's
    # text with the new one, and the new one is the held trace's text at the next edit
    _outlines: list[tuple[str, Outline | None]] = field(default_factory=list)

    def outline_of(self, text: str) -> Outline | None:
        """`text`'s outline (parsed once for the last two texts asked about: each is asked about at two edits)."""
        for outlined, found in self._outlines:
            if outlined is text:
                return found
        found = cheap_outline(text)
        self._outlines = [*self._outlines[-1:], (text, found)]
        return found

    def edit(self, version: int, text: str) -> None:
        old = self.text
        self.version, self._view = version, None
        if text is old or text == old:
            return
        self.text = text
        held = self._held_texts()
        carried = [(older, lines) for older, lines in self._carried if any(older is h for h in held)]
        if any(old is h for h in held):
            carried.append((old, BlockMap([], identity=True)))
        if not carried:
            self._carried = []
            if self._index is not None and self._index.text is old:
                self._index.edit(*changed_span(old, text), text)  # else it is built when first asked for
            return
        if self._index is None or self._index.text is not old:
            self._index = LineIndex(old)
        step = edit_blocks(self._index, text)
        self._carried = [(older, lines.then(step)) for older, lines in carried]

    @property
    def lines(self) -> LineIndex:
        """The current text's lines (`fxlens.lines.split`'s, as a sequence), carried through edits."""
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    @property
    def line_map(self) -> Callable[[str, str], LineMapping]:
        """How lines move from an older text of this buffer to a newer one: into the current text by
        the maps carried through its edits; between two other texts, by comparing them."""
        return self._own_line_map or self._map_lines

    @line_map.setter
    def line_map(self, rule: Callable[[str, str], LineMapping]) -> None:
        self._own_line_map = rule

    def _map_lines(self, old_text: str, new_text: str) -> LineMapping:
        return self._lines_from(old_text) if new_text is self.text else LineMap(old_text, new_text)

    def _held_texts(self) -> list[str]:
        return [t.text for t in (self.good, self.last) if t is not None] + ([self.partial_text] if self.partial else [])

    def _lines_from(self, old_text: str) -> LineMapping:
        """How the lines of `old_text`, one of this buffer's earlier texts, moved into the current one."""
        if old_text is self.text:
            return LineMap(old_text, old_text)
        found = next((lines for older, lines in self._carried if older is old_text), None)
        if found is None:  # not held at the last edit (a trace in flight then): compared once
            found = LineMap(old_text, self.text)
            held = self._held_texts()
            self._carried = [(older, lines) for older, lines in self._carried if any(older is h for h in held)]
            self._carried.append((old_text, found))
        return found

    def importable_text(self) -> str | None:
        """The text other buffers import this one as: the current text, or while it does not parse
        (half typed), the last traced one that did; None when none did (the file on disk is imported)."""
        if self._checked_version != self.version:
            self._checked_version, self._text_parses = self.version, _parses(self.text)
        if self._text_parses:
            return self.text
        return self.good.text if self.good is not None else None

    def add_partial(self, text: str, report: ClassReport) -> None:
        if text != self.partial_text:
            self.partial, self.partial_text = {}, text
        self.partial[report.name] = report
        self._view = None

    def finish(self, traced: Traced) -> None:
        self.last = traced
        if traced.parsed:
            self.good = traced
        self.partial, self.partial_text = {}, ""
        self.history.append(traced.version)
        del self.history[:-50]
        self._view = None

    def update_classes(self, update: Callable[[ClassReport, str], ClassReport]) -> None:
        """Pass every class held (the last good trace's, the trace in flight's) through `update`, with
        the text it was traced from: how a level computed later joins the reports."""
        good = self.good
        if good is not None:
            self.good = replace(
                good, report=replace(good.report, classes=[update(c, good.text) for c in good.report.classes])
            )
            if self.last is good:
                self.last = self.good
        self.partial = {name: update(c, self.partial_text) for name, c in self.partial.items()}
        self._view = None

    @property
    def tracing(self) -> bool:
        return self.task is not None and not self.task.done()

    def view(self) -> View:
        # every mutation above resets the cache, so it is valid until the next one
        if self._view is None:
            self._view = self._build_view()
        return self._view

    def _build_view(self) -> View:
        report = FileReport(self.path)
        if self.last is None and not self.partial:
            return View(report, self.version)
        classes: dict[str, ClassReport] = {}
        maps: dict[int, LineMapping] = {}  # the reports often come from one text: map through it once

        def mapped(old_text: str) -> LineMapping:
            if id(old_text) not in maps:
                maps[id(old_text)] = self.line_map(old_text, self.text)
            return maps[id(old_text)]

        if self.good is not None:
            lines = mapped(self.good.text)
            for cls in self.good.report.classes:
                moved = shift_class(cls, lines)
                if moved is not None:
                    classes[cls.name] = moved
            report.python, report.torch = self.good.report.python, self.good.report.torch
        if self.partial:
            lines = mapped(self.partial_text)
            for name, cls in self.partial.items():
                moved = shift_class(cls, lines)
                if moved is not None:
                    classes[name] = moved
        report.classes = sorted(classes.values(), key=lambda c: c.line)
        if self.last is not None:
            report.diagnostics = shift_diagnostics(self.last.report.diagnostics, mapped(self.last.text))
        stale = self.last is not None and not self.last.parsed and self.good is not None
        return View(report, self.version, stale=stale, traced=self.last is not None)

    def class_at(self, line: int | None) -> str | None:
        if line is None:
            return None
        for cls in self.view().report.classes:
            if cls.line <= line <= cls.end_line:
                return cls.name
        return None


class Documents:
    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def open(self, uri: str, path: str, version: int, text: str) -> Document:
        doc = self._docs.get(uri)
        if doc is None:
            doc = self._docs[uri] = Document(uri, path, version, text)
        else:
            doc.edit(version, text)
        return doc

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def __contains__(self, uri: str) -> bool:
        return uri in self._docs

    def close(self, uri: str) -> Document | None:
        return self._docs.pop(uri, None)

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._docs.values()))

    def workspace_context(self, doc: Document, roots: list[str]) -> WorkspaceContext:
        buffers = sorted(
            (d.path, text)
            for d in self
            if d is not doc and d.importable and d.path.endswith(".py") and (text := d.importable_text()) is not None
        )
        return WorkspaceContext(tuple(roots), tuple(buffers))

    def neighbours(self, doc: Document, roots: list[str]) -> list[Document]:
        """The other open Python buffers an edit of `doc` may change the graphs of: those in a
        workspace folder that holds `doc` (with no folders, every other one)."""
        if not doc.path.endswith(".py"):
            return []
        shared = [r for r in roots if _inside(doc.path, r)]
        if roots and not shared:
            return []
        return [
            d
            for d in self
            if d is not doc
            and d.importable
            and d.path.endswith(".py")
            and (not roots or any(_inside(d.path, r) for r in shared))
        ]

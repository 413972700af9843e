"""Cells are coordinates: (cell, line, column) <-> positions of a notebook's virtual module.

Beside lsp/positions.py and built on it: a report position of the virtual module (1-based module
line, UTF-8 byte column) becomes an LSP position in the cell that holds the line, counted in the
cell's own text (a neutralised magic line keeps its real columns); an LSP position in a cell becomes
the module position. `CellLines` renumbers a class report into its cell's lines for what shows line
numbers as text (lens titles, the graph view), and the module lines fxlens's messages quote ("the
directive (line 23)") become the cell's ("line 5", or "line 2 of code cell 1" for another cell's).
"""

from __future__ import annotations

import re
from dataclasses import replace

from lsprotocol import types

from fxlens.draft_report import Draft, DraftValue
from fxlens.engine.notebook import CellSpan, VirtualModule
from fxlens.engine.shift import LineMapping, shift_class, shift_report
from fxlens.lsp.positions import Coords, Ranges
from fxlens.report import ClassReport, Diagnostic, FileReport

_QUOTED_LINE = re.compile(r"\b(line) (\d+)\b")


class CellCoords(Ranges):
    """Coords for one cell: the same converters as `Coords`, report side in module lines."""

    def __init__(self, cell: CellSpan, encoding: str | None, module: VirtualModule | None = None) -> None:
        self.cell = cell
        self.module = module  # the notebook's cells, for the lines messages quote
        self._coords = Coords("", encoding, cell.lines)  # the cell's own lines, as the editor has them

    def contains(self, line: int | None) -> bool:
        return line is not None and self.cell.holds(line)

    def _local(self, line: int) -> int:
        return max(1, min(line - self.cell.start + 1, len(self.cell.lines)))

    def lsp_position(self, line: int, byte_col: int) -> types.Position:
        if line > self.cell.end:  # a span that runs past the cell ends at its last character
            return self._coords.line_end(len(self.cell.lines))
        if line < self.cell.start:
            return types.Position(line=0, character=0)
        return self._coords.lsp_position(self._local(line), byte_col)

    def line_end(self, line: int) -> types.Position:
        return self._coords.line_end(self._local(line))

    def report_position(self, position: types.Position) -> tuple[int, int]:
        """(1-based module line, 0-based UTF-8 byte column) for an LSP position in the cell."""
        local = max(0, min(position.line, len(self.cell.lines) - 1))
        _, col = self._coords.report_position(types.Position(line=local, character=position.character))
        return self.cell.start + local, col

    def cell_position(self, position: types.Position) -> tuple[int, int]:
        """(1-based line of the cell, byte column): the position in `local_report`'s numbering."""
        line, col = self.report_position(position)
        return line - self.cell.start + 1, col

    def local_class(self, cls: ClassReport) -> ClassReport | None:
        """The class with every position renumbered to this cell's lines (None if it is not in it)."""
        shifted = shift_class(cls, CellLines(self.cell))
        return self._local_texts(shifted) if shifted is not None else None

    def local_report(self, report: FileReport) -> FileReport:
        """The classes defined in this cell and the diagnostics on its lines, in the cell's lines."""
        shifted = shift_report(report, CellLines(self.cell))
        return replace(
            shifted,
            classes=[self._local_texts(c) for c in shifted.classes],
            diagnostics=[self.local_diagnostic(d) for d in shifted.diagnostics],
        )

    def _local_texts(self, cls: ClassReport) -> ClassReport:
        return replace(
            cls,
            levels={
                name: replace(result, diagnostics=[self.local_diagnostic(d) for d in result.diagnostics])
                for name, result in cls.levels.items()
            },
            draft=self._local_draft(cls.draft),
        )

    def _local_draft(self, draft: Draft | None) -> Draft | None:
        """The drafted directive with the lines its values' sources quote ("line 12 rejects ...") in cell numbering."""
        if draft is None:
            return None

        def local(values: list[DraftValue]) -> list[DraftValue]:
            return [replace(v, source=self.local_text(v.source)) for v in values]

        inputs = local(draft.inputs) if draft.inputs is not None else None
        return replace(draft, arguments=local(draft.arguments), inputs=inputs, problem=self.local_text(draft.problem))

    def local_diagnostic(self, d: Diagnostic) -> Diagnostic:
        """The diagnostic with the module lines its texts quote in cell numbering (its span is not moved)."""
        return replace(
            d,
            message=self.local_text(d.message),
            explanation=self.local_text(d.explanation),
            fix=self.local_text(d.fix),
        )

    def local_text(self, text: str) -> str:
        module = self.module
        if module is None or not text:
            return text

        def cell_line(match: re.Match[str]) -> str:
            line = int(match.group(2))
            cell = module.cell_at(line)
            if cell is None:
                return match.group(0)
            local = f"{match.group(1)} {line - cell.start + 1}"
            return local if cell == self.cell else f"{local} of code cell {module.cells.index(cell) + 1}"

        return _QUOTED_LINE.sub(cell_line, text)


class CellLines(LineMapping):
    """Module line -> line of one cell (None for the other cells' lines), for `shift_class`."""

    def __init__(self, cell: CellSpan) -> None:
        self.identity = False
        self.cell = cell

    def line(self, line: int | None) -> int | None:
        if line is None or not self.cell.holds(line):
            return None
        return line - self.cell.start + 1

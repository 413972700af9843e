"""Text a client shows as Markdown (small tables, code spans) or as plain text (aligned columns) when it has no
Markdown, written block by block: what the hover (hover.py) writes into."""

from __future__ import annotations

MAX_ROWS = 24


class Out:
    """Collects blocks and writes them as Markdown or as plain text."""

    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown
        self.blocks: list[str] = []

    def code(self, text: str) -> str:
        return f"`{text}`" if self.markdown and text else text

    def bold(self, text: str) -> str:
        return f"**{text}**" if self.markdown else text

    def line(self, text: str) -> None:
        self.blocks.append(text)

    def verbatim(self, text: str) -> None:
        """Text shown as it is (an exception's message: underscores, asterisks and line breaks kept)."""
        self.blocks.append(f"```text\n{text}\n```" if self.markdown else text)

    def table(self, headers: list[str], rows: list[list[str]], total: int | None = None) -> None:
        """`total`: how many rows there are when the caller built only the first MAX_ROWS of them."""
        more = (len(rows) if total is None else total) - MAX_ROWS
        rows = rows[:MAX_ROWS]
        if self.markdown:

            def row(cells: list[str]) -> str:
                return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

            lines = [row(headers), "|" + "|".join("---" for _ in headers) + "|", *map(row, rows)]
        else:
            widths = [max(len(c) for c in column) for column in zip(headers, *rows)]
            lines = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [headers, *rows]]
        self.blocks.append("\n".join(lines) + (f"\n… {more} more" if more > 0 else ""))

    def text(self) -> str:
        return ("\n\n" if self.markdown else "\n").join(self.blocks)

"""bench/RESULTS.md, the one results file: a `## ` section per measurement, each written by the benchmark that
measures it (`python -m bench suite` its table's sections, `python -m bench reach-packages` the reach section);
a benchmark rewriting its own sections keeps every other one."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS_FILE = Path(__file__).resolve().parent / "RESULTS.md"


def sections(text: str) -> dict[str, str]:
    """`## ` heading -> that section's text (heading included)."""
    parts = re.split(r"(?m)^(?=## )", text)
    return {part.splitlines()[0]: part for part in parts if part.startswith("## ")}


def keep_other_sections(table: str, old: str) -> str:
    """The generated table, then the sections of the old file it does not make (those written by the
    benchmarks run on their own: bench/graph_view.mjs, bench/core_aten.py, ...), in their order."""
    made = sections(table)
    kept = [text for heading, text in sections(old).items() if heading not in made]
    return table.rstrip("\n") + "\n" + "".join("\n" + text.rstrip("\n") + "\n" for text in kept)


def with_section(section: str, old: str) -> str:
    """The old file with `section` in place of the section of the same heading (at the end when it has none)."""
    heading = section.splitlines()[0]
    parts = re.split(r"(?m)^(?=## )", old)
    new = section.rstrip("\n") + "\n"
    if heading in [part.splitlines()[0] for part in parts if part.startswith("## ")]:
        return "".join(
            (new + ("\n" if index < len(parts) - 1 else "")) if part.startswith(heading + "\n") else part
            for index, part in enumerate(parts)
        )
    return old.rstrip("\n") + "\n\n" + new

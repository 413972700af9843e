"""Graph breaks in torch's own words: the registry entry (`torch/_dynamo/graph_break_registry.json`) and
the documentation link torch prints for a break, found from the break's type (`gb_type`).

`torch._dynamo.explain` keeps a terse internal reason per break (`generic_jump TensorVariable()`); the
exception dynamo raised, whose first line is the gb_type, reaches only its `graph_breaks` log. That log
is listened to while dynamo runs, and its records are matched to the breaks by file and line.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

import torch

_AT = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\n")
_REASON = "Graph Break Reason: "


@dataclass
class Entry:
    """One break type as torch describes it."""

    gb_type: str
    gb_id: str | None = None
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    link: str | None = None


@lru_cache(maxsize=1)
def registry() -> dict[str, list[dict]]:
    path = os.path.join(os.path.dirname(torch.__file__), "_dynamo", "graph_break_registry.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}  # an older torch without a registry: the break's own text stands alone


@lru_cache(maxsize=1)
def _ids() -> dict[str, str]:
    return {variant["Gb_type"]: gb_id for gb_id, variants in registry().items() for variant in variants}


def gb_type_in(text: str) -> str | None:
    """The registered break type named by a line of `text` (torch's message puts it on a line of its own)."""
    ids = _ids()
    return next((line.strip() for line in text.splitlines() if line.strip() in ids), None)


def _joined(fragments: list[str]) -> list[str]:
    """The registry splits one hint into fragments where torch's source concatenates strings; a fragment
    ending in a space continues into the next."""
    hints: list[str] = []
    carry = ""
    for fragment in fragments:
        carry += fragment
        if not fragment.endswith((" ", "\n")):
            hints.append(carry.strip())
            carry = ""
    if carry.strip():
        hints.append(carry.strip())
    return hints


def _live(text: str, key: str) -> list[str]:
    """`Explanation:` / `Hint:` paragraphs of the message torch raised (its fields filled in)."""
    found = []
    for match in re.finditer(rf"^  {key}: (.*?)(?=^  \S|\Z)", text, re.MULTILINE | re.DOTALL):
        found.append(" ".join(match.group(1).split()))
    return found


def _variant(variants: list[dict], text: str) -> dict:
    """The registry's variant of this type that matches what torch raised (a type keeps its old wordings)."""

    def score(variant: dict) -> tuple:
        stem = variant["Explanation"].split("{")[0].strip().strip('"')
        return (
            bool(stem) and stem in " ".join(text.split()),
            not variant["Explanation"].startswith(("_", '"')),
            len(variant["Hints"]),
        )

    return max(variants, key=score)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).rstrip(".") == " ".join(b.split()).rstrip(".")


def describe(gb_type: str | None, text: str) -> Entry | None:
    """Torch's description of a break of `gb_type`, `text` being the message it raised; None when the
    type is not in the registry."""
    if gb_type is None or gb_type not in _ids():
        return None
    gb_id = _ids()[gb_type]
    variant = _variant([v for v in registry()[gb_id] if v["Gb_type"] == gb_type], text)
    live = _live(text, "Explanation")
    explanation = variant["Explanation"]
    if "{" in explanation or explanation.startswith(("_", '"')):  # a template: the filled-in one is torch's text
        explanation = live[0] if live else explanation
    hints = _joined(variant["Hints"])
    hints += [h for h in _live(text, "Hint") if not any(_same(h, known) for known in hints)]
    link = torch._dynamo.exc.get_gbid_documentation_link(gb_type)
    return Entry(gb_type, gb_id, explanation, hints, link)


@dataclass
class Logged:
    """The graph-break messages dynamo logged, by (file, line) of the break's innermost frame."""

    messages: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    def at(self, filename: str, line: int) -> list[str]:
        return self.messages.get((os.path.abspath(filename), line), [])


class _Listener(logging.Handler):
    def __init__(self, logged: Logged) -> None:
        super().__init__(logging.DEBUG)
        self.logged = logged

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        where = _AT.search(text)
        if where and _REASON in text:
            key = (os.path.abspath(where.group("file")), int(where.group("line")))
            self.logged.messages.setdefault(key, []).append(text.split(_REASON, 1)[1])


@contextmanager
def listening() -> Iterator[Logged]:
    """Dynamo's graph-break log, kept here instead of printed (its W lines on stderr are quieted too)."""
    import torch._dynamo.symbolic_convert as symbolic_convert

    logger = symbolic_convert.graph_break_log
    quiet = logging.getLogger("torch")
    logged = Logged()
    listener = _Listener(logged)
    before = (logger.level, logger.propagate, quiet.level)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(listener)
    quiet.setLevel(logging.CRITICAL)
    try:
        yield logged
    finally:
        logger.removeHandler(listener)
        logger.setLevel(before[0])
        logger.propagate = before[1]
        quiet.setLevel(before[2])

"""Which classes an edit can affect, so the others keep their reports instead of being traced again.

Conservative on purpose: a class is skipped only when its own source is unchanged, nothing outside
the classes changed (module functions, imports, constants feed every class), no class it names
changed, and the parent that builds it (`built_by`) is not being traced either. Anything unclear
(a parse error, added or removed classes, different settings) means "trace everything".
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from fxlens.engine.documents import Traced
from fxlens.engine.shift import LineMap, shift_class, shift_report
from fxlens.engine.worker_client import TraceOptions

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Outline:
    rest: str  # every line outside the classes, in order
    sources: dict[str, str]  # class name -> its lines, directive comments and decorators included
    names_used: dict[str, set[str]]


def _outline(text: str) -> Optional[_Outline]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.split("\n")
    taken = [False] * len(lines)
    sources: dict[str, str] = {}
    used: dict[str, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1  # the `# fxlens:` directive (and any comment block) belongs to the class
        end = node.end_lineno or node.lineno
        chunk = lines[start:end]
        for index in range(start, end):
            taken[index] = True
        sources[node.name] = "\n".join(chunk)
        used[node.name] = set(_WORD.findall(sources[node.name]))
    # blank lines only move things, and moving is what shifting handles
    rest = "\n".join(line for line, inside in zip(lines, taken) if not inside and line.strip())
    return _Outline(rest, sources, used)


def plan(good: Optional[Traced], text: str, options: TraceOptions) -> Optional[list[str]]:
    """Class names to trace (None: all of them; []: none, the old report still holds)."""
    if good is None or good.options != options:
        return None
    old, new = _outline(good.text), _outline(text)
    if old is None or new is None or old.rest != new.rest or list(old.sources) != list(new.sources):
        return None
    parents = {c.name: c.built_by for c in good.report.classes if c.built_by}
    todo = {name for name in new.sources if new.sources[name] != old.sources[name]}
    traced = {c.name for c in good.report.classes}
    if todo - traced:
        # a class that is not a traced Module (a config dataclass, a helper) feeds whichever Module
        # builds or calls it, by name or not (GPT(GPTConfig()) is built from defaults): trace everything
        return None
    grew = True
    while grew:
        grew = False
        for name in new.sources:
            if name in todo:
                continue
            depends = any(other in new.names_used[name] for other in todo if other != name)
            if depends or parents.get(name) in todo:
                todo.add(name)
                grew = True
        for name in list(todo):
            parent = parents.get(name)
            if parent in new.sources and parent not in todo:
                todo.add(parent)  # the worker builds a child through its parent only if both are asked for
                grew = True
    if len(todo) == len(new.sources):
        return None
    return [name for name in new.sources if name in todo]


def merge(good: Optional[Traced], fresh: Traced, only: Optional[list[str]]) -> Traced:
    """The fresh report, completed with the untouched classes of the previous one (shifted)."""
    if only is None or good is None or not fresh.parsed:
        return fresh
    lines = LineMap(good.text, fresh.text)
    kept = [moved for c in good.report.classes if c.name not in only
            if (moved := shift_class(c, lines)) is not None]
    fresh.report.classes = sorted(fresh.report.classes + kept, key=lambda c: c.line)
    return fresh


def reuse(good: Traced, version: int, text: str) -> Traced:
    """The previous result restamped for a text that differs from it in nothing a trace can see."""
    return Traced(version, text, shift_report(good.report, LineMap(good.text, text)), good.options)

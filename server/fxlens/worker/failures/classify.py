"""Turn an exception raised while building or tracing into a diagnostic a person can act on."""

from __future__ import annotations

import os
import re
import sys
import traceback
import types
from collections.abc import Iterator
from typing import Any

from fxlens.report import Diagnostic, Span
from fxlens.worker.failures.rules import RULES, Failure, fallback

# a message past this is cut at a word boundary (torch's longest first paragraphs are ~1,500 characters)
MESSAGE_CAP = 3000


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception chain, the original cause (innermost in time) first."""
    seen: set[int] = set()
    chain = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain[::-1]


def _tracebacks(exc: BaseException) -> Iterator[types.TracebackType]:
    """Every traceback entry across the exception chain; the original cause (innermost in time) first,
    so the frames nearest the failure come last."""
    for error in _chain(exc):
        tb = error.__traceback__
        while tb is not None:
            yield tb
            tb = tb.tb_next


def _in_file(path: str) -> Any:
    """`code -> whether it was compiled from `path``, each file name resolved once: a recursion a million
    deep leaves a million traceback entries of one or two code objects."""
    seen: dict[str, bool] = {}

    def test(code: types.CodeType) -> bool:
        name = code.co_filename
        found = seen.get(name)
        if found is None:
            found = seen[name] = os.path.abspath(name) == path
        return found

    return test


def user_frames(exc: BaseException, path: str) -> list[tuple[types.CodeType, int, int]]:
    """(code, lasti, lineno) of every traceback frame in `path`, outermost first, across the chain."""
    ours = _in_file(path)
    return [(tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno) for tb in _tracebacks(exc) if ours(tb.tb_frame.f_code)]


def innermost_user_frame(exc: BaseException, path: str) -> tuple[types.CodeType, int, int] | None:
    """`user_frames(exc, path)[-1]` (None when there is none), without a tuple per frame: a recursion a
    million deep would cost seconds of allocation and collection."""
    ours, found, code, mine = _in_file(path), None, None, False
    for error in _chain(exc):
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is not code:  # (a recursion repeats one code object)
                code = tb.tb_frame.f_code
                mine = ours(code)
            if mine:
                found = tb
            tb = tb.tb_next
    return (found.tb_frame.f_code, found.tb_lasti, found.tb_lineno) if found is not None else None


def span_of(code: types.CodeType, lasti: int, lineno: int, lines: list[str]) -> Span:
    """The exact columns of the instruction, where Python (>= 3.11) records them."""
    if sys.version_info >= (3, 11):
        positions = list(code.co_positions())
        index = lasti // 2
        if 0 <= index < len(positions):
            line, end_line, col, end_col = positions[index]
            if line is not None and col is not None:
                return Span(line, col, end_line or line, end_col if end_col is not None else col)
    return whole_line(lineno, lines)


def whole_line(lineno: int, lines: list[str]) -> Span:
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    indent = len(text.encode()) - len(text.lstrip().encode())
    return Span(lineno, indent, lineno, len(text.rstrip().encode()))


def message_text(exc: BaseException) -> str:
    """`Type: message`: the message's first paragraph whole (torch puts the gist there and advice and
    internals after a blank line), cut at a word boundary only past MESSAGE_CAP."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", str(exc).strip()) if p.strip()]
    first = paragraphs[0] if paragraphs else ""
    if len(first) > MESSAGE_CAP:
        first = first[:MESSAGE_CAP].rsplit(None, 1)[0] + " …"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def traceback_text(exc: BaseException) -> str:
    """The whole traceback as Python prints it, causes included: what a bug report about fxlens needs."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


_PACKAGE_DIRS = re.compile(r"[\\/](?:site|dist)-packages[\\/]")
# torch's own machinery: tracing, export, dispatch, and the call path of every module
_MACHINERY = {"fx", "export", "utils", "overrides", "nn/modules/module"}


def _library(filename: str) -> str | None:
    """The installed library a frame's file belongs to ("einops", "torch.nn"), or None for the user's
    code, the standard library and torch's machinery."""
    parts = _PACKAGE_DIRS.split(os.path.abspath(filename), maxsplit=1)
    if len(parts) != 2:
        return None  # the workspace (or the standard library)
    inside = parts[1].replace("\\", "/")
    top, _, rest = inside.partition("/")
    if top != "torch":
        return top.split(".")[0] or None
    second = rest.split("/")[0].removesuffix(".py")
    if second.startswith("_") or second in _MACHINERY or rest.removesuffix(".py") in _MACHINERY:
        return None
    return f"torch.{second}"


def _has_proxy(values: Any) -> bool:
    import torch.fx  # the worker has torch; imported here so the rules stay importable without it

    items = values if isinstance(values, (list, tuple)) else [values]
    return any(
        isinstance(v, torch.fx.Proxy)
        or (isinstance(v, (list, tuple)) and any(isinstance(i, torch.fx.Proxy) for i in v))
        for v in items
    )


def _failure(
    exc: BaseException, path: str, lines: list[str], stage: str, level: str | None, line: int, class_line: int
) -> Failure:
    entries = list(_tracebacks(exc))
    ours = _in_file(path)
    last_user = next((i for i in range(len(entries) - 1, -1, -1) if ours(entries[i].tb_frame.f_code)), -1)
    inner = entries[last_user + 1 :]
    named = [(tb, _library(tb.tb_frame.f_code.co_filename)) for tb in inner]
    named = [(tb, lib) for tb, lib in named if lib]
    failure = Failure(
        message_text(exc), level, stage, lines[line - 1].strip() if last_user >= 0 and 0 < line <= len(lines) else ""
    )
    if named:
        innermost, library = named[-1]
        first = next(tb for tb, lib in named if lib == library)
        code = innermost.tb_frame.f_code
        where = _PACKAGE_DIRS.split(os.path.abspath(code.co_filename), maxsplit=1)[-1].replace("\\", "/")
        owner = first.tb_frame.f_locals.get("self")
        failure.library, failure.library_where = library, f"{where}:{innermost.tb_lineno} in {code.co_name}"
        failure.library_function = first.tb_frame.f_code.co_name
        failure.library_class = type(owner).__name__ if owner is not None else ""
    innermost_locals = entries[-1].tb_frame.f_locals.values() if entries else ()
    failure.proxy_involved = (
        "Proxy" in failure.text or "symbolic" in failure.text or any(_has_proxy(v) for v in innermost_locals)
    )
    failure.methods = methods_of_class(lines, class_line)
    return failure


def methods_of_class(lines: list[str], class_line: int) -> list[str]:
    """Names of the methods defined in the class whose `class` statement is at `class_line`."""
    names, indent = [], None
    for text in lines[class_line:]:
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        width = len(text) - len(text.lstrip())
        if width == 0:
            break
        indent = width if indent is None else indent
        match = re.match(r"\s*(?:async\s+)?def\s+(\w+)\s*\(", text)
        if match and width == indent:
            names.append(match.group(1))
    return names


def forward_decorators(lines: list[str], class_line: int) -> Span | None:
    """The decorator lines above the class's own `def forward`, when it has decorators."""
    for index in range(class_line, len(lines)):
        text = lines[index]
        if text.strip() and not text[0].isspace():
            return None
        if re.match(r"\s*(?:async\s+)?def\s+forward\s*\(", text):
            top = index
            while top > class_line and lines[top - 1].lstrip().startswith("@"):
                top -= 1
            if top == index:
                return None
            first = whole_line(top + 1, lines)
            return Span(first.line, first.col, index, len(lines[index - 1].rstrip().encode()))
    return None


MAX_CHAIN = 8


def import_chain(exc: ImportError, path: str) -> str:
    """`model.py:3 → pkg/__init__.py:2 → pkg/predictor.py:1 → import torchvision`: the imports from the
    file's own line to the one that failed (import machinery left out), paths from their common folder."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    start = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == os.path.abspath(path)), None)
    if start is None:
        return ""
    frames = [f for f in frames[start:] if "importlib" not in f.filename][:MAX_CHAIN]
    if len(frames) < 2 and not getattr(exc, "name", None):
        return ""
    base = os.path.commonpath([os.path.dirname(os.path.abspath(f.filename)) for f in frames])
    steps = [f"{os.path.relpath(f.filename, base)}:{f.lineno}" for f in frames]
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        steps.append(f"`import {exc.name}`")
    return " → ".join(steps)


def classify(
    exc: BaseException,
    path: str,
    lines: list[str],
    stage: str,
    level: str | None,
    fallback_span: Span,
    surface: str = "editor",
) -> Diagnostic:
    """One error diagnostic for `exc`, at the innermost line of `path` that led to it (the class line,
    or what a rule knows better, when no frame of `path` was running).

    `stage` is what was going on ("construction", "inputs", "trace", "load"); `surface` where the fix is
    read ("editor" or "cli"), whose words it uses."""
    frame = innermost_user_frame(exc, path)
    span = span_of(*frame, lines) if frame else fallback_span
    failure = _failure(exc, path, lines, stage, level, span.line, fallback_span.line)
    failure.surface = surface
    rule = next((r for r in RULES if r.matches(failure)), None)
    if rule is not None:
        fields = failure.fields()
        category, explanation, fix = rule.category, rule.explanation.format(**fields), rule.fix.format(**fields)
    else:
        category, explanation, fix = fallback(failure)
    if category == "decorated-forward" and not frame:
        span = forward_decorators(lines, fallback_span.line) or span
    if stage == "load" and isinstance(exc, ImportError):
        chain = import_chain(exc, path)
        explanation = f"{explanation} The import chain: {chain}." if chain else explanation
    return Diagnostic.at(span, "error", category, failure.text, explanation, fix, level=level)

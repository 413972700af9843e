"""The editor's progress for a trace: begun before anything is reported on it, and ended, however slowly the
editor answers the request that creates it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from fxlens.lsp import hooks
from fxlens.lsp.hooks import TraceProgress
from fxlens.report import ClassReport, LevelResult


class SlowEditor:
    """The server's `work_done_progress` as seen from an editor that answers `create` only when told to."""

    def __init__(self) -> None:
        self.tokens: dict[str, object] = {}
        self.asked: list[str] = []  # the tokens asked for, answered or not
        self.sent: list[tuple[str, str]] = []  # (token, kind) of each $/progress
        self.answer = asyncio.Event()

    async def create_async(self, token: str) -> None:
        self.asked.append(token)
        await self.answer.wait()
        self.tokens[token] = object()

    def begin(self, token: str, value: object) -> None:
        self.sent.append((token, "begin"))

    def report(self, token: str, value: object) -> None:
        self.sent.append((token, "report"))

    def end(self, token: str, value: object) -> None:
        self.sent.append((token, "end"))


async def test_a_class_traced_while_the_editor_creates_the_progress_is_not_reported_before_it_began(monkeypatch):
    monkeypatch.setattr(hooks, "PROGRESS_AFTER_SECONDS", 0.0)
    editor = SlowEditor()
    progress = TraceProgress(SimpleNamespace(capability=lambda *path: True, work_done_progress=editor))  # type: ignore[arg-type]
    doc = SimpleNamespace(uri="file:///m.py", path="/m.py")
    progress.started(doc)  # type: ignore[arg-type]
    while not editor.asked:  # the progress is asked for: the editor has not answered yet
        await asyncio.sleep(0)
    progress.class_done(doc, ClassReport("Block", 3, 9, levels={"fx": LevelResult("fx", True)}))  # type: ignore[arg-type]
    editor.answer.set()
    while not editor.sent:
        await asyncio.sleep(0)
    progress.ended(doc)  # type: ignore[arg-type]
    kinds = [kind for _, kind in editor.sent]
    assert kinds[0] == "begin" and kinds[-1] == "end", kinds


async def test_a_trace_that_starts_while_the_editor_creates_the_last_ones_progress_leaves_none_spinning(monkeypatch):
    monkeypatch.setattr(hooks, "PROGRESS_AFTER_SECONDS", 0.0)
    editor = SlowEditor()
    progress = TraceProgress(SimpleNamespace(capability=lambda *path: True, work_done_progress=editor))  # type: ignore[arg-type]
    doc = SimpleNamespace(uri="file:///m.py", path="/m.py")
    progress.started(doc)  # type: ignore[arg-type]
    while not editor.asked:
        await asyncio.sleep(0)
    progress.ended(doc)  # type: ignore[arg-type]
    progress.started(doc)  # type: ignore[arg-type]  (an edit: the next trace, while the editor still makes the token)
    while len(editor.asked) < 2:
        await asyncio.sleep(0)
    editor.answer.set()
    while len([kind for _, kind in editor.sent if kind == "begin"]) < 2:
        await asyncio.sleep(0)
    first, second = editor.asked
    assert (first, "end") in editor.sent  # its trace is over
    assert (second, "end") not in editor.sent  # the second trace still runs
    progress.ended(doc)  # type: ignore[arg-type]
    for token in (first, second):
        kinds = [kind for sent, kind in editor.sent if sent == token]
        assert kinds == ["begin", "end"], (token, editor.sent)

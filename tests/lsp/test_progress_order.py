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
        self.sent: list[tuple[str, str]] = []  # (token, kind) of each $/progress
        self.answer = asyncio.Event()

    async def create_async(self, token: str) -> None:
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
    while not progress._tokens:  # the progress is asked for: the editor has not answered yet
        await asyncio.sleep(0)
    progress.class_done(doc, ClassReport("Block", 3, 9, levels={"fx": LevelResult("fx", True)}))  # type: ignore[arg-type]
    editor.answer.set()
    while (doc_token := progress._tokens.get(doc.uri)) is None or (doc_token, "begin") not in editor.sent:
        await asyncio.sleep(0)
    progress.ended(doc)  # type: ignore[arg-type]
    kinds = [kind for _, kind in editor.sent]
    assert kinds[0] == "begin" and kinds[-1] == "end", kinds

"""Shared pieces of the pytest-lsp tests: a client that records fxlens's notifications and lets a test
wait for a condition on them (never for a guessed amount of time)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "lsp"
SERVER = [sys.executable, "-m", "fxlens", "serve", "--stdio"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "server"), os.environ.get("PYTHONPATH")]))}
# a safety net against a hung test, not a timing assertion: every wait ends on an event long before
HANG_GUARD = 120.0


def _value(params: Any, key: str) -> Any:
    return params.get(key) if isinstance(params, dict) else getattr(params, key, None)


class Recorder:
    """Everything fxlens told the client, plus a way to await a condition over it."""

    def __init__(self) -> None:
        self.reports: list[dict] = []  # fxlens/reportChanged params
        # reportChanged and publishDiagnostics in the order they came: ("report", params) / ("diagnostics", uri)
        self.sequence: list[tuple[str, Any]] = []
        self.statuses: list[dict] = []  # fxlens/status params
        self.published: list[types.PublishDiagnosticsParams] = []
        self.lens_refreshes = self.inlay_refreshes = 0
        self._changed = asyncio.Event()

    def poke(self) -> None:
        self._changed.set()

    async def until(self, predicate: Callable[[], Any], what: str = "condition") -> Any:
        async def wait() -> Any:
            while True:
                self._changed.clear()
                result = predicate()
                if result:
                    return result
                await self._changed.wait()

        try:
            return await asyncio.wait_for(wait(), HANG_GUARD)
        except asyncio.TimeoutError:
            raise AssertionError(f"never happened: {what}") from None


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    record = Recorder()
    client.fx = record  # type: ignore[attr-defined]
    features = dict(DEFAULT_CLIENT_FEATURES)
    base_diagnostics = features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    base_message = features.pop(types.WINDOW_SHOW_MESSAGE)
    base_progress = features.pop(types.PROGRESS)
    register_lsp_features(client, features)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        base_diagnostics(client, params)
        record.published.append(params)
        record.sequence.append(("diagnostics", params.uri))
        record.poke()

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def message(client: LanguageClient, params: Any) -> None:
        base_message(client, params)
        record.poke()

    @client.feature(types.PROGRESS)
    def progress(client: LanguageClient, params: types.ProgressParams) -> None:
        base_progress(client, params)
        record.poke()

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(client: LanguageClient, params: None) -> None:
        record.lens_refreshes += 1
        record.sequence.append(("lens-refresh", None))
        record.poke()

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(client: LanguageClient, params: None) -> None:
        record.inlay_refreshes += 1
        record.poke()

    @client.feature("fxlens/reportChanged")
    def report_changed(client: LanguageClient, params: Any) -> None:
        record.reports.append(
            {k: _value(params, k) for k in ("uri", "version", "complete", "className", "levels", "cost")}
        )
        record.sequence.append(("report", record.reports[-1]))
        record.poke()

    @client.feature("fxlens/status")
    def status(client: LanguageClient, params: Any) -> None:
        record.statuses.append({k: _value(params, k) for k in ("state", "message")})
        record.poke()

    return client


def config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=ENV)


def capabilities(markdown: bool = True) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    # the recorded VS Code (1.65) predates inlay hints; a current one has them
    caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.text_document.inlay_hint = types.InlayHintClientCapabilities()
    if not markdown:
        caps.text_document.hover.content_format = [types.MarkupKind.PlainText]
    return caps


async def start(client: LanguageClient, options: dict | None = None, markdown: bool = True) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(markdown),
            initialization_options=options or {},
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(ROOT)), name="fxlens")],
        )
    )


class Doc:
    """One open buffer in the test client."""

    def __init__(self, client: LanguageClient, path: Path, text: str) -> None:
        self.client, self.path, self.text = client, path, text
        self.uri = from_fs_path(str(path))
        self.version = 1

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    def change(self, text: str) -> int:
        self.version += 1
        self.text = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.version

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    def at(self, line: int, needle: str = "", offset: int = 0) -> types.Position:
        """LSP position of `needle` on 1-based `line` (its first character, plus `offset`)."""
        text = self.lines[line - 1]
        return types.Position(line=line - 1, character=(text.index(needle) if needle else 0) + offset)

    async def traced(self, version: int | None = None) -> dict:
        """Wait for the complete report of `version` (default: the latest text)."""
        version = self.version if version is None else version
        record: Recorder = self.client.fx  # type: ignore[attr-defined]
        return await record.until(
            lambda: next(
                (
                    r
                    for r in reversed(record.reports)
                    if r["uri"] == self.uri and r["version"] == version and r["complete"]
                ),
                None,
            ),
            f"complete report of {self.path.name} v{version}",
        )

    async def hover(self, position: types.Position) -> str | None:
        result = await self.client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=self.uri), position=position)
        )
        return result.contents.value if result is not None else None

    async def lenses(self) -> list[types.CodeLens]:
        return await self.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    def diagnostics(self) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(self.uri, []))


def open_doc(client: LanguageClient, fixture: str | Path, folder: Path, text: str | None = None) -> Doc:
    """Open a copy of a fixture (a fresh path per test, so tests sharing a server never collide): a file of
    tests/fixtures/lsp by its name, or any file by its path."""
    source = FIXTURES / fixture
    path = folder / source.name
    shutil.copy(source, path)
    doc = Doc(client, path, text if text is not None else path.read_text())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=doc.version, text=doc.text)
        )
    )
    return doc


def inserted(text: str, edit: types.TextEdit) -> str:
    """`text` after an edit that inserts at a line's start (what a directive action does)."""
    lines = text.split("\n")
    start, end = edit.range.start, edit.range.end
    assert start.line == end.line and start.character == end.character == 0  # an insertion at a line start
    return (
        "\n".join(lines[: start.line]) + ("\n" if start.line else "") + edit.new_text + "\n".join(lines[start.line :])
    )


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )

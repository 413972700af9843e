"""A real LSP client over stdio (pygls's LanguageClient) that records notifications with their arrival
time, so a benchmark can measure "request sent → answer" and "edit sent → fresh result" without sleeps.

Used for both fxlens and jedi-language-server: the same client, the same capabilities, the same
positions, so the only difference measured is the server.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

ROOT = Path(__file__).resolve().parents[1]
FXLENS_COMMAND = [sys.executable, "-m", "fxlens", "serve", "--stdio"]
JEDI_COMMAND = [sys.executable, "-c", "import sys; from jedi_language_server.cli import cli; sys.exit(cli())"]
SERVER_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "server"), os.environ.get("PYTHONPATH")])),
}
# a guard against a hung benchmark, not a measurement: every wait ends on an event long before
HANG_GUARD_SECONDS = 600.0


def _value(params: Any, key: str) -> Any:
    return params.get(key) if isinstance(params, dict) else getattr(params, key, None)


@dataclass
class Event:
    at: float  # time.perf_counter() when the client's loop handled it
    method: str
    params: dict


@dataclass
class Doc:
    uri: str
    path: Path
    text: str
    version: int = 1


@dataclass
class Session:
    """One server process and the client talking to it."""

    command: list[str]
    client: LanguageClient = field(
        default_factory=lambda: LanguageClient("fxlens-bench", "1", converter_factory=default_converter)
    )
    events: list[Event] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _stderr: asyncio.Task | None = None

    async def start(self, root: Path, init_options: dict | None = None) -> float:
        """Start the server and initialize it; returns the perf_counter time the process was launched."""
        self._register_handlers()
        launched = time.perf_counter()
        await self.client.start_io(*self.command, env=SERVER_ENV, cwd=str(root))
        # pygls pipes the server's stderr and never reads it: drain it or a chatty server blocks
        self._stderr = asyncio.create_task(self._drain(self.client._server.stderr))
        caps = client_capabilities("visual-studio-code")
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=caps,
                process_id=os.getpid(),
                initialization_options=init_options or {},
                root_uri=from_fs_path(str(root)),
                workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name=root.name)],
            )
        )
        self.client.initialized(types.InitializedParams())
        return launched

    @property
    def pid(self) -> int:
        return self.client._server.pid

    async def _drain(self, stream: Any) -> None:
        while await stream.read(1 << 16):
            pass

    def _register_handlers(self) -> None:
        def record(method: str) -> Callable:
            def handler(client: LanguageClient, params: Any) -> None:
                self.events.append(Event(time.perf_counter(), method, self._plain(method, params)))
                self._changed.set()

            return handler

        for method in (
            "fxlens/reportChanged",
            "fxlens/status",
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.WINDOW_SHOW_MESSAGE,
            types.WINDOW_LOG_MESSAGE,
            types.PROGRESS,
        ):
            self.client.feature(method)(record(method))
        # requests a server may send: answer them as an editor would, or the server waits on us
        for method in (
            types.WORKSPACE_CODE_LENS_REFRESH,
            types.WORKSPACE_INLAY_HINT_REFRESH,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.CLIENT_REGISTER_CAPABILITY,
            types.WORKSPACE_DIAGNOSTIC_REFRESH,
            types.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
        ):
            self.client.feature(method)(lambda params: None)  # pygls passes only params when unannotated

        @self.client.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list:
            return [None for _ in params.items]

    @staticmethod
    def _plain(method: str, params: Any) -> dict:
        if method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            return {"uri": params.uri, "version": params.version, "count": len(params.diagnostics)}
        if method == "fxlens/reportChanged":
            return {k: _value(params, k) for k in ("uri", "version", "complete", "className", "levels")}
        if method == "fxlens/status":
            return {k: _value(params, k) for k in ("state", "message")}
        return {}

    # -- waiting ---------------------------------------------------------------------------------

    async def until(self, predicate: Callable[[], Any], what: str, timeout: float = HANG_GUARD_SECONDS) -> Any:
        async def wait() -> Any:
            while True:
                self._changed.clear()
                result = predicate()
                if result:
                    return result
                await self._changed.wait()

        try:
            return await asyncio.wait_for(wait(), timeout)
        except asyncio.TimeoutError:
            raise RuntimeError(f"never happened: {what}") from None

    def first_event(self, method: str, after: float, match: Callable[[dict], bool]) -> Event | None:
        return next((e for e in self.events if e.at >= after and e.method == method and match(e.params)), None)

    async def report_complete(self, doc: Doc, version: int | None = None, after: float = 0.0) -> Event:
        """The fxlens/reportChanged event saying `doc` at `version` is fully traced."""
        version = doc.version if version is None else version
        return await self.until(
            lambda: self.first_event(
                "fxlens/reportChanged",
                after,
                lambda p: p["uri"] == doc.uri and p["version"] == version and p["complete"],
            ),
            f"complete report of {doc.path.name} v{version}",
        )

    async def worker_ready(self) -> Event:
        return await self.until(
            lambda: self.first_event("fxlens/status", 0.0, lambda p: p["state"] == "idle" and p["message"] == "ready"),
            "worker ready",
        )

    # -- documents -------------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> Doc:
        doc = Doc(from_fs_path(str(path)), path, text if text is not None else path.read_text())
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=doc.uri, language_id="python", version=doc.version, text=doc.text
                )
            )
        )
        return doc

    def change(self, doc: Doc, text: str) -> float:
        """Replace the whole text; returns the perf_counter time the notification was sent."""
        doc.version += 1
        doc.text = text
        sent = time.perf_counter()
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return sent

    async def hover(self, doc: Doc, line: int, character: int) -> tuple[float, types.Hover | None]:
        """(seconds from sending the request to having the parsed answer, the answer)."""
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            position=types.Position(line=line, character=character),
        )
        start = time.perf_counter()
        result = await self.client.text_document_hover_async(params)
        return time.perf_counter() - start, result

    async def execute(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 30)
            self.client.exit(None)
            await asyncio.wait_for(self.client.stop(), 30)
        except (asyncio.TimeoutError, RuntimeError):
            if self.client._server is not None and self.client._server.returncode is None:
                self.client._server.kill()
                await self.client._server.wait()
        if self._stderr is not None:
            await asyncio.gather(self._stderr, return_exceptions=True)


def rss_mb(pid: int, field_name: str = "VmRSS") -> float:
    """A process's resident (VmRSS) or peak resident (VmHWM) memory, from /proc."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    return 0.0

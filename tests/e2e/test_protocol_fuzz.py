"""Protocol robustness (issue 5): hypothesis drives one server with random sequences of LSP messages.

Open/change/close in any order (also of documents never opened), positions far out of range,
unknown URIs and schemes, requests for closed documents, cancelled requests, malformed params and
configuration changes with bad values. After every sequence: the server process is alive, every
request got a result or a proper JSON-RPC error (never an internal error), no handler failed
("Error in server" messages), and the server still answers. Traces are of trivial files, so the
worker never slows the sequences down.
"""

from __future__ import annotations

import asyncio
import math
import sys
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest
import pytest_lsp
from hostile_support import TOKEN_VARIABLE
from hostile_support import leftovers_besides as leftovers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_harness import ENV, SERVER, command, make_client, start
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEQUENCES = 500
UNANSWERED_AFTER = 30.0
TOKEN = uuid.uuid4().hex
FOLDER = Path("/nonexistent/fxlens-fuzz")  # documents only live in the editor
URIS = [
    from_fs_path(str(FOLDER / "fuzz_a.py")),
    from_fs_path(str(FOLDER / "fuzz_b.py")),
    "untitled:Untitled-1",
    "file:///nonexistent/dir/ghost.py",
    "https://example.invalid/remote.py",
    "x",
]
TEXTS = [
    "",
    "import torch.nn as nn\n\n\nclass A(nn.Module):\n    def forward(self, x):\n        return x + 1\n",
    "import torch.nn as nn\n\n\nclass A(nn.Module):\n    def forward(self, x:\n",
    "# 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓\nimport torch.nn as nn\nS = '日本語 😀'\n\n\nclass B(nn.Module):\n    def forward(self, x):\n"
    "        return x * 2  # 😀😀\n",
    "\r\n\r\n\x00 not python \t\r\n",
]
COMMANDS = [
    "fxlens.showGraph",
    "fxlens.retrace",
    "fxlens.debugInfo",
    "fxlens.runPass",
    "fxlens.passChoices",
    "fxlens.noSuchCommand",
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
# LSP positions are unsigned 32-bit; anything in that range may arrive, mostly small ones
NUMBER = st.one_of(st.integers(0, 12), st.integers(0, 2**31 - 1))
POSITION = st.fixed_dictionaries({"line": NUMBER, "character": NUMBER})
URI = st.sampled_from(URIS)
# values for each setting, good and bad (never a valid other interpreter: that would restart the worker)
SETTING_VALUES = {
    "python": st.one_of(st.none(), st.integers(), st.lists(st.text(max_size=3), max_size=2), st.just(sys.executable)),
    "levels": st.one_of(
        st.just(["fx"]), st.just(["aten", "fx"]), st.just("fx"), st.just([]), st.just(["dynamo!"]), JSON
    ),
    "timeoutSeconds": st.one_of(st.just(5), st.just(-1), st.just(0), st.just(math.inf), st.just("soon"), JSON),
    "execution": st.one_of(st.sampled_from(["safe", "off", "full", "sometimes", ""]), JSON),
    "inlayHints": st.one_of(st.booleans(), JSON),
    "memoryLimitMB": st.one_of(st.just(512), st.just(-4), st.just(10**30), JSON),
    "unknownKey": JSON,
}
SETTINGS = st.fixed_dictionaries({}, optional=SETTING_VALUES)

OPS = st.one_of(
    st.tuples(st.just("open"), URI, st.sampled_from(TEXTS), st.integers(-3, 10)),
    st.tuples(st.just("change"), URI, st.sampled_from(TEXTS), st.integers(-3, 10)),
    st.tuples(st.just("edit"), URI, POSITION, POSITION, st.text(max_size=6)),
    st.tuples(st.just("close"), URI),
    st.tuples(st.just("hover"), URI, POSITION),
    st.tuples(st.just("lens"), URI),
    st.tuples(st.just("inlay"), URI, POSITION, POSITION),
    st.tuples(st.just("command"), st.sampled_from(COMMANDS), st.lists(st.one_of(URI, JSON), max_size=4)),
    st.tuples(st.just("cancel"), URI, POSITION),
    st.tuples(
        st.just("garbage"),
        st.sampled_from(
            ["textDocument/hover", "textDocument/codeLens", "workspace/executeCommand", "textDocument/inlayHint"]
        ),
        JSON,
    ),
    st.tuples(st.just("config"), SETTINGS),
)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER, client_factory=make_client, server_env={**ENV, TOKEN_VARIABLE: TOKEN}
    ),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": ["fx"], "timeoutSeconds": 10})
    yield
    await lsp_client.shutdown_session()


def doc_id(uri: str) -> dict:
    return {"uri": uri}


class Run:
    """One sequence against the shared server; remembers what it opened so it can clean up."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.opened: set[str] = set()
        self.requests: list[asyncio.Future] = []
        self.methods: list[str] = []

    # Raw JSON-RPC, bypassing the client's typed messages, so that malformed params reach the server.
    def request(self, method: str, params: object, msg_id: str | None = None) -> None:
        msg_id = msg_id or uuid.uuid4().hex
        future: Future = Future()
        self.client.protocol._request_futures[msg_id] = future  # how pygls matches the response
        self.client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        self.requests.append(asyncio.wrap_future(future))
        self.methods.append(method)

    def notify(self, method: str, params: object) -> None:
        self.client.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    def step(self, op: tuple) -> None:
        kind, *args = op
        if kind == "open":
            uri, text, version = args
            self.opened.add(uri)
            self.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}},
            )
        elif kind == "change":
            uri, text, version = args
            self.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            )
        elif kind == "edit":
            uri, start_at, end_at, text = args
            self.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": 99},
                    "contentChanges": [{"range": {"start": start_at, "end": end_at}, "text": text}],
                },
            )
        elif kind == "close":
            self.opened.discard(args[0])
            self.notify("textDocument/didClose", {"textDocument": doc_id(args[0])})
        elif kind == "hover":
            self.request("textDocument/hover", {"textDocument": doc_id(args[0]), "position": args[1]})
        elif kind == "lens":
            self.request("textDocument/codeLens", {"textDocument": doc_id(args[0])})
        elif kind == "inlay":
            self.request(
                "textDocument/inlayHint", {"textDocument": doc_id(args[0]), "range": {"start": args[1], "end": args[2]}}
            )
        elif kind == "command":
            self.request("workspace/executeCommand", {"command": args[0], "arguments": args[1]})
        elif kind == "cancel":
            msg_id = uuid.uuid4().hex
            self.request("textDocument/hover", {"textDocument": doc_id(args[0]), "position": args[1]}, msg_id)
            self.notify("$/cancelRequest", {"id": msg_id})
        elif kind == "garbage":
            self.request(args[0], args[1])
        elif kind == "config":
            self.notify("workspace/didChangeConfiguration", {"settings": {"fxlens": args[0]}})

    async def finish(self) -> list[str]:
        """Close what is open, then check every answer; returns the problems found."""
        for uri in self.opened:
            self.notify("textDocument/didClose", {"textDocument": doc_id(uri)})
        problems = []
        answered = asyncio.gather(*self.requests, return_exceptions=True)
        try:  # a guard against a hang, not a timing assertion: answers take milliseconds
            outcomes = await asyncio.wait_for(answered, UNANSWERED_AFTER)
        except asyncio.TimeoutError:
            return [
                f"unanswered: {method}" for method, request in zip(self.methods, self.requests) if not request.done()
            ]
        for method, outcome in zip(self.methods, outcomes):
            if isinstance(outcome, JsonRpcException) and outcome.code not in (-32603, -32700):
                continue  # a proper error: invalid params, method not found, request cancelled
            if isinstance(outcome, BaseException):
                problems.append(f"{method}: {type(outcome).__name__}: {outcome}")
        return problems


@settings(
    max_examples=SEQUENCES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=st.lists(OPS, min_size=1, max_size=12))
async def test_random_message_sequences(client: LanguageClient, sequence):
    run = Run(client)
    seen = len(client.messages)
    for op in sequence:
        run.step(op)
    problems = await run.finish()
    info = await command(client, "fxlens.debugInfo")  # answers after whatever came before
    assert info["serverPid"] == client._server.pid  # type: ignore[union-attr]
    # pygls shows "Error in server: ..." when a handler raises, or a message does not decode
    server_errors = [m.message for m in client.messages[seen:] if m.message.startswith("Error in server")]
    assert problems == [] and server_errors == [], (problems, server_errors)


async def test_still_traces_and_leaves_nothing_behind(client: LanguageClient, tmp_path):
    # whatever the sequences left in the settings: put them back, then a normal edit must still work
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"levels": ["fx"], "timeoutSeconds": 10}})
    )
    path = tmp_path / "after.py"
    path.write_text(TEXTS[1])
    uri = from_fs_path(str(path))
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXTS[1])
        )
    )
    result = await command(client, "fxlens.retrace", uri)
    assert result["ok"] is True and result["classes"] == ["A"], (result, [m.message for m in client.log_messages][-5:])
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert "fx 3" in [lens.command.title.split(" · ")[0] for lens in lenses]
    info = await command(client, "fxlens.debugInfo")
    assert info["workerStarts"] == 1, sorted({s["message"] for s in client.fx.statuses})  # no worker was lost
    assert leftovers(TOKEN, {info["serverPid"], info["workerPid"]}) == []

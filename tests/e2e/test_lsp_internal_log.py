"""pytest-lsp end to end: an internal error of fxlens reaches the server log (`window/logMessage`) whole,
with its traceback, while the editor's diagnostic stays one line."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import ROOT, config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
FIXTURE = ROOT / "tests" / "fixtures" / "internal" / "rewired_level.py"


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_an_internal_error_is_logged_with_its_traceback(client: LanguageClient, tmp_path):
    doc = open_doc(client, FIXTURE, tmp_path)
    await doc.traced()
    (internal,) = await client.fx.until(
        lambda: [d for d in doc.diagnostics() if d.code == "internal"], "the internal error's diagnostic"
    )
    assert "Traceback" not in internal.message
    (logged,) = [m for m in client.log_messages if "Traceback (most recent call last):" in m.message]
    assert logged.type == types.MessageType.Error
    head, *trace = logged.message.split("\n")
    assert head == f"fxlens: internal error in {doc.path}:11 (Mlp, aten): KeyError: 'a level nobody registered'"
    assert any("_trace_levels" in line for line in trace)
    assert trace[-1] == "KeyError: 'a level nobody registered'"

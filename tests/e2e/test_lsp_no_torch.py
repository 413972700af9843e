"""An interpreter without torch: one clear message, no restart storm, and recovery when the setting changes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import pytest_lsp
from lsp_harness import command, config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    venv = tmp_path_factory.mktemp("no-torch")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    await start(lsp_client, options={"fxlens": {"python": str(venv / "bin" / "python")}})
    yield
    await lsp_client.shutdown_session()


async def test_one_message_no_storm_then_recovery(client: LanguageClient, tmp_path):
    await client.fx.until(lambda: any(s["state"] == "error" for s in client.fx.statuses), "error status")
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "torch" in errors[0].message and "fxlens.python" in errors[0].message
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    result = await command(client, "fxlens.retrace", doc.uri)
    assert result["ok"] is False
    info = await command(client, "fxlens.debugInfo")
    assert info["workerStarts"] == 1 and info["workerPid"] is None
    assert len([m for m in client.messages if m.type == types.MessageType.Error]) == 1
    # pointing fxlens.python at an interpreter with torch brings everything up, the open file included
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"python": sys.executable}})
    )
    await doc.traced()
    assert any(lens.command.title.startswith("fx 7 · aten 9") for lens in await doc.lenses())
    assert client.fx.statuses[-1]["state"] == "idle"

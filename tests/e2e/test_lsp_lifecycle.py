"""pytest-lsp end to end: scheduling, progress, responsiveness, and the worker's life and death."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
import pytest_lsp
from lsp_harness import FIXTURES, HANG_GUARD, command, config, open_doc, start
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


def sleepy(seconds: float) -> str:
    return (FIXTURES / "sleepy.py").read_text().replace("SECONDS = 20", f"SECONDS = {seconds}")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_progress_while_a_trace_runs(client: LanguageClient, tmp_path):
    doc = open_doc(client, "sleepy.py", tmp_path, text=sleepy(0.5))
    await doc.traced()

    def ended():
        return [
            token
            for token, values in client.progress_reports.items()
            if values and values[0].kind == "begin" and values[-1].kind == "end"
        ]

    tokens = await client.fx.until(ended, "a progress that began and ended")
    begin = client.progress_reports[tokens[0]][0]
    assert begin.title == "fxlens" and "sleepy.py" in begin.message


async def test_hovers_answer_while_another_document_traces_for_20_seconds(client: LanguageClient, tmp_path):
    slow = open_doc(client, "sleepy.py", tmp_path, text=sleepy(20))
    await client.fx.until(lambda: client.fx.statuses and client.fx.statuses[-1]["state"] == "tracing", "tracing")
    fast = open_doc(client, "residual_mlp.py", tmp_path)
    await fast.traced()
    hover = await fast.hover(fast.at(13, "self.fc"))
    assert "call_module fc" in hover
    info = await command(client, "fxlens.debugInfo")
    # the answer came while the slow trace is still in flight (it sleeps 20 s at least twice)
    assert slow.uri in info["tracing"] and not info["traced"][slow.uri]
    slow.close()  # kills the trace in flight


async def test_fast_typing_traces_exactly_the_last_text(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    for batch in range(2, 10):
        doc.change(doc.text.replace(f"torch.randn({batch - 1 if batch > 2 else 4}, 8)", f"torch.randn({batch}, 8)"))
    await doc.traced()
    assert "torch.randn(9, 8)" in doc.text
    hover = await doc.hover(doc.at(26, "self.stem"))
    assert "(9, 16) f32" in hover
    info = await command(client, "fxlens.debugInfo")
    history = info["traced"][doc.uri]
    assert history[-1] == doc.version and set(history) <= {1, doc.version}


async def test_unchanged_classes_are_not_traced_again(client: LanguageClient, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    # an edit inside Head only: Encoder keeps its report
    text = doc.text.replace("        y = self.out(x)\n", "        y = self.out(x)\n        y = y * 2\n")
    await doc.traced(doc.change(text))
    info = await command(client, "fxlens.debugInfo")
    assert info["unchanged"][doc.uri] == ["Encoder"]
    titles = {(lens.range.start.line, lens.command.title) for lens in await doc.lenses()}
    assert any(line == 5 and " · aten 6" in title for line, title in titles), titles
    assert "operator.mul" in await doc.hover(doc.at(23, "y * 2"))
    # an edit in Encoder: only Encoder is traced; Head keeps its report, shifted down a line
    text = doc.text.replace("        self.fc = nn.Linear(8, 4)\n", "        self.fc = nn.Linear(8, 4)\n\n")
    await doc.traced(doc.change(text))
    info = await command(client, "fxlens.debugInfo")
    assert info["unchanged"][doc.uri] == ["Head"]
    assert "sigmoid" in await doc.hover(doc.at(25, "y.sigmoid"))
    assert "tanh" in await doc.hover(doc.at(13, "torch.tanh"))


async def test_worker_restarts_after_it_dies_mid_trace(client: LanguageClient, tmp_path):
    info = await command(client, "fxlens.debugInfo")
    old = info["workerPid"]
    doc = open_doc(client, "sleepy.py", tmp_path, text=sleepy(1))
    await client.fx.until(lambda: client.fx.statuses[-1]["state"] == "tracing", "tracing")
    seen = len(client.fx.statuses)
    os.kill(old, signal.SIGKILL)
    await client.fx.until(lambda: any("restarting" in s["message"] for s in client.fx.statuses[seen:]), "restart")
    await doc.traced()  # the lost trace runs again on the new worker
    info = await command(client, "fxlens.debugInfo")
    assert info["workerPid"] not in (None, old) and info["workerStarts"] == 2
    assert info["traced"][doc.uri] == [doc.version]


async def test_restart_worker_command(client: LanguageClient):
    before = (await command(client, "fxlens.debugInfo"))["workerPid"]
    result = await command(client, "fxlens.restartWorker")
    assert result["ok"] is True and result["torch"] and result["pid"] != before


async def test_killed_server_leaves_no_worker_behind(tmp_path):
    other = await config().start()
    await start(other)
    info = await command(other, "fxlens.debugInfo")
    while info["workerPid"] is None:  # the worker is still importing torch: ask again once it is ready
        await other.fx.until(lambda: other.fx.statuses and other.fx.statuses[-1]["message"] == "ready", "ready")
        info = await command(other, "fxlens.debugInfo")
    os.kill(info["serverPid"], signal.SIGKILL)
    gone = asyncio.get_running_loop().create_future()

    def check() -> None:  # not our child: watch /proc until the kernel has reaped it
        if not os.path.exists(f"/proc/{info['workerPid']}") or _zombie(info["workerPid"]):
            gone.set_result(True)
        else:
            asyncio.get_running_loop().call_later(0.05, check)

    check()
    assert await asyncio.wait_for(gone, 30)
    await other.stop()


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def test_while_a_retrace_runs_hovers_use_the_old_result_shifted_through_the_edit(
    client: LanguageClient, tmp_path
):
    slow_tail = (
        "\n\n# fxlens: Slow()(torch.randn(2, 3))\nclass Slow(nn.Module):\n    def forward(self, x):\n"
        "        time.sleep(1.5)\n        return x + 1\n"
    )
    text = (
        "import time\n"
        + (FIXTURES / "residual_mlp.py")
        .read_text()
        .replace('if __name__ == "__main__":\n    print(ResidualMLP(16, 2)(torch.randn(4, 8)))\n', "")
        + slow_tail
    )
    doc = open_doc(client, "residual_mlp.py", tmp_path, text=text)
    await doc.traced()
    assert "call_module fc" in await doc.hover(doc.at(14, "self.fc"))
    statuses = len(client.fx.statuses)
    # Slow is edited too: traced again, its sleep keeps the retrace running while the hovers are answered
    doc.change(
        "# a new first line\n"
        + doc.text.replace("        return torch.relu(y) + x", "        return torch.relu(y) - x").replace(
            "        return x + 1", "        return x + 2"
        )
    )
    await client.fx.until(lambda: any(s["state"] == "tracing" for s in client.fx.statuses[statuses:]), "retrace")
    moved = await doc.hover(doc.at(15, "self.fc"))  # the old line 14, unchanged text
    edited = await doc.hover(doc.at(16, "torch.relu"))  # edited: the old nodes no longer apply
    info = await command(client, "fxlens.debugInfo")
    assert doc.uri in info["tracing"]  # both answers came from the old result, during the retrace
    assert "call_module fc" in moved and "| 1 → L15 |" in moved
    assert edited is None
    await doc.traced()
    assert "operator.sub" in await doc.hover(doc.at(16, "torch.relu"))


async def _exit_status(other: LanguageClient) -> int:
    server = other._server  # the process pytest-lsp started
    gone = asyncio.get_running_loop().create_future()
    other.exit(None)

    def check() -> None:  # exit is a notification: watch the process until it has ended
        if server.returncode is not None:
            gone.set_result(server.returncode)
        else:
            asyncio.get_running_loop().call_later(0.05, check)

    check()
    return await asyncio.wait_for(gone, 60)


async def test_a_request_after_shutdown_is_refused_and_exit_then_succeeds(tmp_path):
    other = await config().start()
    await start(other)
    await other.shutdown_async(None)
    with pytest.raises(JsonRpcException) as refused:  # (the guard: pygls alone never answers it)
        await asyncio.wait_for(
            other.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=(tmp_path / "a.py").as_uri()),
                    position=types.Position(line=0, character=0),
                )
            ),
            HANG_GUARD,
        )
    assert refused.value.code == JsonRpcInvalidRequest.CODE
    assert await _exit_status(other) == 0
    await other.stop()


async def test_exit_without_shutdown_ends_the_server_with_status_1():
    other = await config().start()
    await start(other)
    assert await _exit_status(other) == 1
    await other.stop()

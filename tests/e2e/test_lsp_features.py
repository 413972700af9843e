"""pytest-lsp end to end: lenses, hovers, diagnostics and commands from a real server and worker."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys

import pytest
import pytest_lsp
from lsp_harness import ENV, FIXTURES, HANG_GUARD, command, config, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_lenses_on_each_class(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    lenses = await doc.lenses()
    titles = {(lens.range.start.line, lens.command.title) for lens in lenses}
    # the graph link, then one short line per class; the opcode breakdown is the line's tooltip
    assert any(line == 5 and title.startswith("fx 7 · aten 9") for line, title in titles), titles
    assert any(line == 17 and title.startswith("fx 15 · aten ") for line, title in titles), titles
    breakdown = next(lens.command.tooltip for lens in lenses if lens.command.title.startswith("fx 15 "))
    assert (
        "fx: 15 nodes (1 placeholder · 4 call_module · 2 get_attr · 6 call_function · 1 call_method · 1 output)"
        in breakdown
    )
    graph = [lens.command for lens in lenses if lens.command.title == "Show graph"]
    assert [list(c.arguments) for c in graph] == [[doc.uri, "Residual", "fx"], [doc.uri, "ResidualMLP", "fx"]]
    assert all(c.command == "fxlens.showGraph" for c in graph)


async def test_hover_matches_the_cli(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    cli = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fxlens",
        "graph",
        str(doc.path),
        "--json",
        "--class",
        "Residual",
        env=ENV,
        stdout=asyncio.subprocess.PIPE,
    )
    await doc.traced()
    text = await doc.hover(doc.at(13, "self.fc"))
    out, _ = await asyncio.wait_for(cli.communicate(), HANG_GUARD)
    for level in json.loads(out):
        for node in level["nodes"]:
            if node["line"] == 13:
                assert node["target"] in text, (node, text)
                shape = "(" + ", ".join(map(str, node["shape"])) + ("," if len(node["shape"]) == 1 else "") + ")"
                assert shape in text
                assert f"| {node['num_users']} → L" in text
    assert "call_module fc" in text and "aten.linear.default" in text and "get_attr shift" in text
    assert "×2 in ResidualMLP: blocks.0 … blocks.1" in text
    # the cursor is on `self.fc(x)`: its own node comes first and is marked
    first_row = next(line for line in text.splitlines() if line.startswith("| ▸"))
    assert "call_module fc" in first_row


async def test_hover_member_and_class_lines(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    member = await doc.hover(doc.at(10, "register_buffer"))
    assert "self.shift" in member and "buffer (16,) f32" in member and "get_attr shift" in member and "L13" in member
    fc = await doc.hover(doc.at(9, "self.fc"))
    assert "module `Linear`" in fc and "`fc.weight` (16, 16) f32" in fc and "call_module fc" in fc
    cls = await doc.hover(doc.at(18, "ResidualMLP"))
    assert "built: directive" in cls and "x: (4, 8) f32" in cls
    assert "| fx | 15 | 1 | 2 | 6 | 4 | 1 | 1 |" in cls
    assert await doc.hover(doc.at(1)) is None


async def test_plaintext_hover_and_utf8_positions(tmp_path):
    """A client without Markdown that prefers UTF-8 columns (the server must count bytes, not UTF-16 units)."""
    from lsp_harness import capabilities

    client = await config().start()
    try:
        caps = capabilities(markdown=False)
        caps.general.position_encodings = [types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16]
        result = await client.initialize_session(
            types.InitializeParams(capabilities=caps, initialization_options={"fxlens": {"inlayHints": True}})
        )
        assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        text = (
            (FIXTURES / "residual_mlp.py")
            .read_text()
            .replace("        y = self.fc(x) + self.shift", "        é = self.fc(x)\n        y = é + self.shift")
        )
        doc = open_doc(client, "residual_mlp.py", tmp_path, text=text)
        await doc.traced()
        hover = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=doc.uri), position=doc.at(15, "torch.relu")
            )
        )
        assert hover.contents.kind == types.MarkupKind.PlainText
        assert "|" not in hover.contents.value and "**" not in hover.contents.value
        assert "torch.relu" in hover.contents.value
        hints = await client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=doc.uri),
                range=types.Range(start=types.Position(0, 0), end=types.Position(40, 0)),
            )
        )
        ends = {h.position.line: h.position.character for h in hints}
        line = doc.lines[13]  # `y = é + self.shift`: é is 2 bytes, 1 UTF-16 unit
        assert ends[13] == len(line.encode()) == len(line) + 1
        await client.shutdown_session()
    finally:
        await client.stop()


async def test_diagnostics_appear_and_clear(client: LanguageClient, tmp_path):
    doc = open_doc(client, "untraceable.py", tmp_path)
    await doc.traced()
    errors = [d for d in doc.diagnostics() if d.severity == types.DiagnosticSeverity.Error]
    # fx and aten fail at this `if` for one reason: one diagnostic, fx's own text in its related information
    assert [d.range.start.line for d in errors] == [12]
    assert errors[0].message.startswith("fx and aten cannot trace this data-dependent branch")
    assert any("control flow" in info.message for info in errors[0].related_information)
    titles = [lens.command.title for lens in await doc.lenses()]
    assert any(t.startswith("fx untraceable, line 13") for t in titles), titles
    fixed = doc.text.replace(
        "        if y.sum() > 0:\n            return y\n        return -y",
        "        return torch.where(y.sum() > 0, y, -y)",
    )
    version = doc.change(fixed)
    await doc.traced(version)
    published = client.fx.published[-1]
    assert published.uri == doc.uri and published.version == version
    assert not [d for d in doc.diagnostics() if d.severity == types.DiagnosticSeverity.Error]
    titles = [lens.command.title for lens in await doc.lenses()]
    assert any(re.match(r"fx \d+ · ", t) for t in titles), titles


async def test_hover_on_the_failing_line_shows_the_failure_and_its_fix(client: LanguageClient, tmp_path):
    doc = open_doc(client, "untraceable.py", tmp_path)
    await doc.traced()
    text = await doc.hover(doc.at(13, "y.sum()"))  # no level made a node here: both fail at this `if`
    assert text is not None
    assert "**fx and aten cannot trace this data-dependent branch** in Gate · `data-dependent-control-flow`" in text
    assert "**fx:**" in text and "**aten:** the branch depends on a value computed from the input" in text
    assert "symbolically traced variables cannot be used as inputs to control flow" in text
    assert "fix: Compute both sides and select with `torch.where(cond, a, b)`" in text


async def test_syntax_error_keeps_last_good_result(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    good = doc.text
    broken = good.replace("        return self.head(h).sum()", "        return self.head(h).sum(")
    await doc.traced(doc.change(broken))
    assert any(d.code == "syntax" for d in doc.diagnostics())
    titles = [lens.command.title for lens in await doc.lenses()]
    assert any(t.startswith("fx 7 · aten 9") and t.endswith(" (stale)") for t in titles), titles
    hover = await doc.hover(doc.at(14, "torch.relu"))
    assert "stale" in hover and "torch.relu" in hover
    await doc.traced(doc.change(good))
    assert not any(d.code == "syntax" for d in doc.diagnostics())
    assert any(
        t.startswith("fx 7 · aten 9") and "stale" not in t for t in [lens.command.title for lens in await doc.lenses()]
    )


async def test_show_graph_command(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    payload = await command(client, "fxlens.showGraph", doc.uri, "Residual", "aten")
    payload = payload if isinstance(payload, dict) else json.loads(json.dumps(payload, default=vars))
    assert {"uri", "class", "level", "levels", "ok", "printout", "code", "table", "diagnostics", "graph"} <= set(
        payload
    )
    assert payload["class"] == "Residual" and payload["level"] == "aten" and payload["ok"] is True
    assert payload["levels"] == ["fx", "aten"]
    assert payload["printout"].startswith("graph():") and "aten.linear.default" in payload["table"]
    names = {n["id"] for n in payload["graph"]["nodes"]}
    assert {"source": "linear", "target": "add"} in payload["graph"]["edges"] and "linear" in names
    default = await command(client, "fxlens.showGraph", doc.uri)
    assert default["level"] == "fx" and default["class"] in ("Residual", "ResidualMLP")
    missing = await command(client, "fxlens.showGraph", doc.uri, "Nope")
    assert missing["ok"] is False and "Nope" in missing["message"]
    shown = await command(client, "fxlens.showGraph", doc.uri, "ResidualMLP", "fx", True)
    assert client.shown_documents[-1].uri == shown["document"]
    path = shown["document"][len("file://") :]
    assert not os.access(path, os.W_OK) or os.geteuid() == 0
    assert os.stat(path).st_mode & 0o222 == 0
    assert "blocks_0_fc" in open(path).read()


async def test_retrace_command_and_no_torch_in_server(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    result = await command(client, "fxlens.retrace", doc.uri)
    assert result["ok"] is True and result["classes"] == ["Residual", "ResidualMLP"]
    info = await command(client, "fxlens.debugInfo")
    assert info["torchImported"] is False and info["workerPid"]


async def test_inlay_hints_follow_the_setting(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    params = types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        range=types.Range(start=types.Position(0, 0), end=types.Position(40, 0)),
    )
    assert not await client.text_document_inlay_hint_async(params)
    refreshes = client.fx.inlay_refreshes
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"inlayHints": True}})
    )
    await client.fx.until(lambda: client.fx.inlay_refreshes > refreshes, "inlay refresh after the setting changed")
    hints = await client.text_document_inlay_hint_async(params)
    by_line = {h.position.line: h.label for h in hints}
    assert by_line[12] == "(4, 16) f32" and by_line[25] == "(4, 16) f32"
    assert hints[0].position.character == len(doc.lines[12])
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fxlens": {}}))


async def test_bad_setting_warns_and_falls_back(client: LanguageClient, tmp_path):
    before = len(client.messages)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"fxlens": {"timeoutSeconds": -3, "execution": "sometimes", "levels": ["fx"]}}
        )
    )
    await client.fx.until(lambda: len(client.messages) >= before + 2, "two warnings")
    text = "\n".join(m.message for m in client.messages[before:])
    assert all(m.type == types.MessageType.Warning for m in client.messages[before:])
    assert "fxlens.timeoutSeconds" in text and "60.0" in text and "fxlens.execution" in text and "'safe'" in text
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    titles = [lens.command.title for lens in await doc.lenses()]
    assert not any(t.startswith("aten") for t in titles)  # the good value (levels) still applied
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fxlens": {}}))


async def test_execution_off_runs_nothing(client: LanguageClient, tmp_path):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"execution": "off"}})
    )
    await client.fx.until(lambda: "execution is off" in (client.fx.statuses[-1]["message"] or ""), "off status")
    doc = open_doc(client, "two_models.py", tmp_path)
    result = await command(client, "fxlens.retrace", doc.uri)
    assert result["ok"] is False and not await doc.lenses()
    said = await doc.hover(doc.at(11, "forward"))  # Encoder.forward
    assert "runs no code of this file" in said and "`off`" in said
    assert await doc.hover(doc.at(1)) is None  # outside any class it stays quiet
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fxlens": {}}))
    await doc.traced()  # back to `safe`: the open file is traced


async def test_malformed_messages_get_errors_not_silence(client: LanguageClient):
    from concurrent.futures import Future

    from pygls.exceptions import JsonRpcException

    seen = len(client.messages)
    future: Future = Future()
    client.protocol._request_futures["bad-hover"] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": "bad-hover", "method": "textDocument/hover", "params": None})
    client.protocol._send_data(
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {
                "textDocument": {"uri": "file:///never/opened.py", "version": 2},
                "contentChanges": [{"text": "x"}],
            },
        }
    )
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(asyncio.wrap_future(future), HANG_GUARD)
    assert error.value.code == -32602  # invalid params
    info = await command(client, "fxlens.debugInfo")  # answered after both messages
    assert info["serverPid"] and not [m for m in client.messages[seen:] if m.message.startswith("Error in server")]


async def test_settings_are_pulled_when_the_notification_carries_none(client: LanguageClient, tmp_path):
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    await doc.traced()
    client.set_configuration({"levels": ["fx"], "inlayHints": True}, section="fxlens")
    refreshes = client.fx.inlay_refreshes
    try:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await client.fx.until(lambda: client.fx.inlay_refreshes > refreshes, "settings pulled and applied")
        await doc.traced(doc.change(doc.text + "\n"))
        assert not any(lens.command.title.startswith("aten") for lens in await doc.lenses())
    finally:
        client.set_configuration({}, section="fxlens")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fxlens": {}}))

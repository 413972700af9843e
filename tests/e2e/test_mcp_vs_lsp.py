"""The MCP server and the language server agree node for node (issue 43): for the README's example, the MCP
`graph` answer at each cheap level has the nodes (name, opcode, target, line, submodule) and the edges of the
language server's `fxlens.showGraph` payload, and `list_modules` the counts of its lenses."""

from __future__ import annotations

import shutil
import sys

import pytest
import pytest_lsp
from lsp_harness import ENV, FIXTURES, command, config, open_doc, start
from mcp import Client, StdioServerParameters
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_graph_answers_are_the_language_servers_graph_view(client: LanguageClient, tmp_path):
    shutil.copy(FIXTURES / "residual_mlp.py", tmp_path / "residual_mlp.py")
    doc = open_doc(client, "residual_mlp.py", tmp_path)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "fxlens", "mcp", "--root", str(tmp_path)], env=ENV, cwd=str(tmp_path)
    )
    async with Client(server, read_timeout_seconds=120) as mcp:
        listed = (await mcp.call_tool("list_modules", {"path": "residual_mlp.py"})).structured_content
        await doc.traced()
        titles = [lens.command.title for lens in await doc.lenses()]
        compared = 0
        for cls in listed["classes"]:
            counts = {s["level"]: s["node_count"] for s in cls["levels"]}
            # the class's lens: `fx 15 · aten 23 · …`
            assert any(t.startswith(f"fx {counts['fx']} · aten {counts['aten']}") for t in titles), (cls, titles)
            for level in ("fx", "aten"):
                answer = await mcp.call_tool(
                    "graph", {"path": "residual_mlp.py", "class_name": cls["name"], "level": level}
                )
                ours = answer.structured_content
                view = (await command(client, "fxlens.showGraph", doc.uri, cls["name"], level))["graph"]
                assert [(n["name"], n["op"], n["target"], n["line"], n["module"]) for n in ours["nodes"]] == [
                    (n["id"], n["op"], n["target"], n["line"], n["scope"]) for n in view["nodes"]
                ]
                assert sorted((n["name"], user) for n in ours["nodes"] for user in n["users"]) == sorted(
                    (e["source"], e["target"]) for e in view["edges"]
                )
                compared += len(ours["nodes"])
    assert compared == 7 + 9 + 15 + 23  # Residual and ResidualMLP at fx and aten

"""docs/agents.md's set-up lines work as written (issue 43): README links the page; each agent's server entry
(Claude Code's `.mcp.json`, Claude Desktop's config, Codex's TOML, VS Code's `mcp.json`) is read from the page
and started with the MCP SDK's stdio client the way that agent would start it, and answers a tool call."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "agents.md"
EXAMPLE = ROOT / "examples" / "residual_mlp.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def _entries() -> dict[str, dict[str, Any]]:
    """Each agent's fxlens entry: command and args."""
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11 and later)
    claude_code, desktop, vscode = (json.loads(block) for block in _blocks("json"))
    (codex,) = (tomllib.loads(block) for block in _blocks("toml"))
    return {
        "claude-code": claude_code["mcpServers"]["fxlens"],
        "claude-desktop": desktop["mcpServers"]["fxlens"],
        "codex": codex["mcp_servers"]["fxlens"],
        "vscode": vscode["servers"]["fxlens"],
    }


def test_the_readme_links_the_agents_page():
    assert "[docs/agents.md](docs/agents.md)" in (ROOT / "README.md").read_text()


def _start(entry: dict[str, Any], folder: Path, cwd: Path) -> StdioServerParameters:
    """The entry as its agent runs it: the project folder where the page says `/path/to/your/project` or
    `${workspaceFolder}`; `fxlens` the installed command (this checkout's code through PYTHONPATH)."""
    command = shutil.which(entry["command"])
    if command is None:
        pytest.skip("no `fxlens` command on PATH (`pip install -e .` installs it)")
    args = [str(folder) if a in ("/path/to/your/project", "${workspaceFolder}") else a for a in entry["args"]]
    return StdioServerParameters(command=command, args=args, env=ENV, cwd=str(cwd))


async def _ask(server: StdioServerParameters, paths: list[str]) -> list[Any]:
    async with Client(server, read_timeout_seconds=120) as client:
        return [await client.call_tool("list_modules", {"path": path}) for path in paths]


@pytest.mark.parametrize("agent", ["claude-code", "claude-desktop", "codex", "vscode"])
def test_each_agents_entry_starts_a_server_for_its_project(agent, tmp_path):
    entry = _entries()[agent]
    assert entry["command"] == "fxlens" and entry["args"][0] == "mcp"
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(EXAMPLE, project / "model.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Claude Code starts servers in the project; the others are started elsewhere and name it with --root
    cwd = project if agent == "claude-code" else elsewhere
    assert ("--root" in entry["args"]) == (agent != "claude-code")
    inside, outside = asyncio.run(_ask(_start(entry, project, cwd), ["model.py", str(EXAMPLE)]))
    assert not inside.is_error, inside.content
    assert [c["name"] for c in inside.structured_content["classes"]] == ["Residual", "ResidualMLP"]
    assert outside.is_error and "outside the workspace roots" in outside.content[0].text


def test_the_page_names_every_tool_the_server_lists():
    async def names() -> list[str]:
        server = StdioServerParameters(command=sys.executable, args=["-m", "fxlens", "mcp"], env=ENV, cwd=str(ROOT))
        async with Client(server) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    listed = asyncio.run(names())
    table = re.findall(r"^\| `(\w+)` \|", PAGE.read_text(), re.M)
    assert table == listed


def test_the_page_says_which_vscode_api_the_extension_lacks_to_register_the_server():
    """VS Code's MCP provider API (`lm.registerMcpServerDefinitionProvider`) came with 1.101: while the extension
    builds against older types, the page says so and gives `.vscode/mcp.json`; an upgrade fails this test until
    the extension registers the server and the page says that instead."""
    manifest = json.loads((ROOT / "vscode-client" / "package.json").read_text())
    types = manifest["devDependencies"]["@types/vscode"].lstrip("^~")
    assert tuple(int(part) for part in types.split(".")[:2]) < (1, 101)
    page = PAGE.read_text()
    assert f"`@types/vscode` {types.rsplit('.', 1)[0]}" in page and "registerMcpServerDefinitionProvider" in page
    extension = "".join(p.read_text() for p in (ROOT / "vscode-client" / "src").rglob("*.ts"))
    assert "registerMcpServerDefinitionProvider" not in extension

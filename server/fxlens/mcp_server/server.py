"""Wiring: the MCP server object (the official SDK's MCPServer on stdio), its lifespan (the warm worker
started before the first call, stopped at the end) and the one table of tools with their schemas.

The parameters' types and descriptions below are what an agent sees of each tool; the return annotation
names the TypedDict the SDK publishes as the tool's output schema (results.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, get_args

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from fxlens import __version__ as VERSION
from fxlens.mcp_server import deep_results, fix_results, results, tools
from fxlens.mcp_server.workspace import Policy, Workspace
from fxlens.pass_catalog import BUILTIN_NAMES
from fxlens.report import LEVELS

LevelName = Literal["fx", "dynamo", "aten", "core-aten", "backward", "inductor"]
assert get_args(LevelName) == LEVELS, "the tools' level names are report.LEVELS"

INSTRUCTIONS = (
    "fxlens shows what torch.fx, torch.export and torch.compile make of the nn.Module classes in a Python file, "
    "without running the model for real (weights on the meta device, the user's code in a disposable process). "
    "Start with list_modules(path); then graph(path, class_name, level) for nodes with their source lines, "
    "findings(path) for what does not trace and how to fix it; fixes(path), then apply_fix(path, id), for rewrites "
    "fxlens proved (re-traced, outputs compared) before offering them. Lines are 1-based, as editors show them."
)

Path = Annotated[str, Field(description="a Python file of the workspace, absolute or relative to its root")]
ClassName = Annotated[str, Field(description="an nn.Module class of the file, as list_modules names it")]

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@asynccontextmanager
async def _running(workspace: Workspace) -> AsyncIterator[None]:
    workspace.start()
    try:
        yield None
    finally:
        await workspace.stop()


def build(policy: Policy) -> MCPServer[Any]:
    workspace = Workspace(policy)
    server: MCPServer[Any] = MCPServer(
        "fxlens",
        version=VERSION,
        instructions=INSTRUCTIONS,
        lifespan=lambda _: _running(workspace),
        log_level="WARNING",
    )

    @server.tool(
        description="The nn.Module classes of a file: each one's line, how fxlens built it (a `# fxlens:` "
        "directive, guessed arguments, a call found elsewhere) and its node count per level (fx, aten).",
        annotations=_READ,
    )
    async def list_modules(path: Path) -> Annotated[CallToolResult, results.ListModulesResult]:
        return await tools.guarded(tools.list_modules(workspace, path))

    @server.tool(
        description="One class's graph at one level: node_count, then the nodes (opcode, target and ATen "
        "overload, shape, dtype, users, source line, submodule). A graph larger than `limit` comes a page at a "
        "time (call again with next_offset) with node counts per submodule; `module` keeps one submodule's nodes.",
        annotations=_READ,
    )
    async def graph(
        path: Path,
        class_name: ClassName,
        level: Annotated[
            LevelName,
            Field(description="fx (symbolic_trace), aten (torch.export), core-aten, backward, dynamo, inductor"),
        ] = "fx",
        offset: Annotated[int, Field(description="the first node of the page, counted from 0")] = 0,
        limit: Annotated[int, Field(description="nodes per page")] = tools.DEFAULT_PAGE,
        module: Annotated[str, Field(description="only this submodule's nodes (`blocks.0`); empty: all")] = "",
    ) -> Annotated[CallToolResult, results.GraphResult]:
        return await tools.guarded(tools.graph(workspace, path, class_name, level, (offset, limit, module)))

    @server.tool(
        description="What keeps a file's classes from tracing or exporting, as `fxlens check` reports it: "
        "severity, line and column (1-based), category, message, explanation and the fix to apply.",
        annotations=_READ,
    )
    async def findings(path: Path) -> Annotated[CallToolResult, results.FindingsResult]:
        return await tools.guarded(tools.findings(workspace, path))

    @server.tool(
        description="Run a graph pass on a class's fx graph, on a copy: node counts before and after, the nodes it "
        "changed, and the proof (both modules run on the same seeded inputs): equal, close, changes results. "
        f"Built-in passes: {', '.join(BUILTIN_NAMES)}; or a function of the file marked `# fxlens: pass`.",
        annotations=_READ,
    )
    async def run_pass(
        path: Path,
        class_name: ClassName,
        pass_name: Annotated[str, Field(description="a built-in pass or a `# fxlens: pass` function of the file")],
    ) -> Annotated[CallToolResult, deep_results.PassResult]:
        return await tools.guarded(tools.run_pass(workspace, path, class_name, pass_name))

    @server.tool(
        description="The kernels torch.compile (inductor) makes of a class's forward on this machine: each "
        "generated kernel, library call and fallback, with the ATen ops it computes and the source lines it "
        "fuses. Compiles: seconds per class.",
        annotations=_READ,
    )
    async def kernels(path: Path, class_name: ClassName) -> Annotated[CallToolResult, deep_results.KernelsResult]:
        return await tools.guarded(tools.kernels(workspace, path, class_name))

    @server.tool(
        description="Rewrites fxlens proposes for a file's findings (a tensor `if` to torch.where, a builtin to the "
        "torch op, ...), each proven before it is offered: re-traced (the finding gone, none new) and the outputs "
        "and module state compared on 3 inputs. Each with its id, edits, proof and diff; apply one with apply_fix.",
        annotations=_READ,
    )
    async def fixes(path: Path) -> Annotated[CallToolResult, fix_results.FixesResult]:
        return await tools.guarded(tools.fixes(workspace, path))

    @server.tool(
        description="Write one proven fix (an id from `fixes`) into the file: the same edits as the editor's quick "
        "fix and `fxlens check --fix`. Refused when the fix is not proven or the file changed where it edits.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    )
    async def apply_fix(
        path: Path, id: Annotated[str, Field(description="a fix's id, as `fixes` gives it")]
    ) -> Annotated[CallToolResult, fix_results.AppliedResult]:
        return await tools.guarded(tools.apply_fix(workspace, path, id))

    return server


async def serve(policy: Policy) -> None:
    await build(policy).run_stdio_async()

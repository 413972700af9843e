"""`fxlens mcp`: the MCP server for coding agents, over stdio (its tools: fxlens.mcp_server)."""

from __future__ import annotations

import argparse
import asyncio
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="run the MCP server for coding agents over stdio")
    mcp.add_argument(
        "--python", default=sys.executable, help="interpreter that has torch (default: the one running fxlens)"
    )
    mcp.add_argument(
        "--execution",
        choices=("safe", "full", "off"),
        default="safe",
        help="safe: run only imports and definitions (default); full: the whole file but __main__; off: run nothing",
    )
    mcp.add_argument("--timeout", type=float, default=60.0, help="seconds per trace (default 60)")
    mcp.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a workspace folder the tools may read (repeat for several; default: the current folder)",
    )
    mcp.set_defaults(run=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    # imported here: the SDK loads only for this command
    from fxlens.mcp_server.server import serve
    from fxlens.mcp_server.workspace import Policy

    asyncio.run(serve(Policy(args.python, args.execution, args.timeout, tuple(args.root))))
    return 0

"""The `fxlens` command: its parser, one sub-command per module of this package, and how a run ends."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from fxlens import orphans
from fxlens.cli import check, graph, mcp_cmd, pass_cmd, serve
from fxlens.cli.files import USAGE_ERROR, CliError
from fxlens.messages import DEFAULT_GUESS_MEMORY_MB


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="fxlens", description="See what torch.fx makes of your nn.Module.")
    sub = root.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--python", default=sys.executable, help="interpreter that has torch (default: the one running fxlens)"
        )
        p.add_argument(
            "--execution",
            choices=("safe", "full"),
            default="safe",
            help="safe: run only imports and definitions (default); full: run the whole file but __main__",
        )
        p.add_argument("--timeout", type=float, default=120.0, help="seconds per file (default 120)")
        p.add_argument(
            "--guess-memory",
            type=int,
            default=DEFAULT_GUESS_MEMORY_MB,
            metavar="MB",
            help="real memory fxlens may spend on a class without a directive, or on real CPU weights "
            f"for a meta module (default {DEFAULT_GUESS_MEMORY_MB})",
        )

    # registered in the order `fxlens --help` lists them
    graph.register(sub, common)
    check.register(sub, common)
    pass_cmd.register(sub, common)
    serve.register(sub)
    mcp_cmd.register(sub)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # what a killed worker's traces leave comes up here, not to init, and ends when the worker does
    # (engine/worker_client.py): every child of this process is fxlens's own
    orphans.adopt()
    run: Callable[[argparse.Namespace], int] = args.run  # the sub-command's, from its `set_defaults`
    try:
        return run(args)
    except CliError as error:
        print(f"fxlens: {error}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # `fxlens graph ... | head`: the reader has all it wanted
        sys.stderr.close()
        return 0

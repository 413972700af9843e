"""`fxlens check`, `fxlens diff` and `fxlens merge`: fxlens in CI (the work is done in fxlens.ci)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from fxlens.ci.check import add_arguments as add_check_arguments
from fxlens.ci.check import run_check
from fxlens.ci.diff import add_arguments as add_diff_arguments
from fxlens.ci.diff import run_diff
from fxlens.ci.merge import add_arguments as add_merge_arguments
from fxlens.ci.merge import run_merge
from fxlens.cli.files import CliError


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    check = sub.add_parser("check", help="report where tracing breaks; exit 1 on any error, 2 on a usage error")
    add_check_arguments(check)
    common(check)
    check.set_defaults(run=cmd_check)

    diff = sub.add_parser("diff", help="what the working tree's changes do to the graphs, against a git ref")
    add_diff_arguments(diff)
    common(diff)
    diff.set_defaults(run=cmd_diff)

    merge = sub.add_parser("merge", help="join the JSON or SARIF of `fxlens check --shard K/N` runs into one result")
    add_merge_arguments(merge)
    merge.set_defaults(run=cmd_merge)


def cmd_check(args: argparse.Namespace) -> int:
    return run_check(args, CliError)


def cmd_diff(args: argparse.Namespace) -> int:
    return run_diff(args, CliError)


def cmd_merge(args: argparse.Namespace) -> int:
    return run_merge(args, CliError)

"""`fxlens diff [REF]`: the graphs of the Module classes of the files changed since REF (default HEAD)
and of the files that import them,
traced at REF (its tree written to a temporary folder) and in the working tree, compared per class and
level. Exit status 1 when a `--fail-on` condition holds, 2 on a usage error (not a repository, no such ref)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from collections.abc import Callable

from fxlens.ci.cache import workspace_imports
from fxlens.ci.diff_render import diff_json, diff_markdown, diff_text
from fxlens.ci.git import GitError, changed_python_files, export_tree, resolve, toplevel
from fxlens.ci.graph_diff import FileDiff, file_diff
from fxlens.ci.parallel import default_jobs, trace_all
from fxlens.ci.tree import files_to_check, module_files
from fxlens.engine.worker_client import TraceOptions, WorkerUnavailable
from fxlens.report import LEVELS, in_ladder_order

# graph breaks are what a review most wants to see next to node counts: the dynamo level is on by default
DIFF_LEVELS = ("fx", "aten", "dynamo")
FAIL_ON = ("new-failure", "new-break", "any-change")


def add_arguments(diff: argparse.ArgumentParser) -> None:
    diff.add_argument(
        "ref", nargs="?", default="HEAD", help="the git ref to compare the working tree with (default HEAD)"
    )
    diff.add_argument(
        "--level",
        choices=LEVELS,
        action="append",
        metavar="LEVEL",
        help=f"compare this level (repeat; default: {', '.join(DIFF_LEVELS)})",
    )
    diff.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="text (default) or markdown (a pull-request comment)",
    )
    diff.add_argument("--json", action="store_true", help="machine-readable output (schema in README)")
    diff.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        action="append",
        default=[],
        help="exit 1 when the change adds a failure, adds a graph break, or changes any graph (repeat)",
    )
    diff.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=default_jobs(),
        metavar="N",
        help="files traced at once (default: the number of cores)",
    )


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def _module_paths(root: str, paths: list[str]) -> list[str]:
    """The changed files that define a Module class; a base class from a file they import counts."""
    absolute = [os.path.join(root, p) for p in paths if os.path.isfile(os.path.join(root, p))]
    pool = list(dict.fromkeys([*absolute, *(i for p in absolute for i in workspace_imports(p, root))]))
    found = set(module_files(pool))
    return [p for p in paths if os.path.join(root, p) in found]


def _importers(root: str, changed: set[str]) -> list[str]:
    """The Module files under `root` that import one of the `changed` files, at any depth: a class's
    graph changes with the code it calls, wherever that code lives."""
    targets = {os.path.join(root, p) for p in changed}
    found = []
    for path in map(os.path.abspath, files_to_check([root], [], root)):
        if path not in targets and targets.intersection(workspace_imports(path, root)):
            found.append(os.path.relpath(path, root))
    return found


def compare(ref: str, cwd: str, python: str, options: TraceOptions, jobs: int) -> list[FileDiff]:
    root = toplevel(cwd)
    commit = resolve(ref, root)
    changes = changed_python_files(commit, root)
    with tempfile.TemporaryDirectory(prefix="fxlens-diff-") as old_root:
        export_tree(commit, root, old_root)
        before = {
            *_module_paths(old_root, [p for p, s in changes.items() if s != "A"]),
            *_importers(old_root, set(changes)),
        }
        after = {*_module_paths(root, [p for p, s in changes.items() if s != "D"]), *_importers(root, set(changes))}
        paths = sorted(before | after)
        jobs_list = [
            (os.path.join(old_root, p), _read(os.path.join(old_root, p)), [old_root]) for p in paths if p in before
        ]
        jobs_list += [(os.path.join(root, p), _read(os.path.join(root, p)), [root]) for p in paths if p in after]
        reports = asyncio.run(trace_all(jobs_list, python, options, jobs))
        texts = {path: text for path, text, _ in jobs_list}
        return [
            file_diff(
                p,
                reports.get(os.path.join(old_root, p)),
                reports.get(os.path.join(root, p)),
                texts.get(os.path.join(old_root, p), ""),
                texts.get(os.path.join(root, p), ""),
            )
            for p in paths
        ]


def failing(diffs: list[FileDiff], conditions: list[str]) -> list[str]:
    """The `--fail-on` conditions the change meets."""
    levels = [d for f in diffs for c in f.classes for d in c.levels]
    met = {
        "new-failure": any(d.new_failures for d in levels) or any(f.new_failures for f in diffs),
        "new-break": any(d.new_breaks for d in levels),
        "any-change": any(c.status != "same" for f in diffs for c in f.classes) or any(f.new_failures for f in diffs),
    }
    return [c for c in conditions if met[c]]


def run_diff(args: argparse.Namespace, usage_error: Callable[[str], Exception]) -> int:
    levels = in_ladder_order(args.level) if args.level else DIFF_LEVELS
    options = TraceOptions.from_flags(args, levels, cost=False)
    try:
        diffs = compare(args.ref, os.getcwd(), args.python, options, max(1, args.jobs))
    except GitError as error:
        raise usage_error(str(error)) from error
    except WorkerUnavailable as error:
        raise usage_error(error.terminal_text()) from error
    if args.json:
        print(json.dumps(diff_json(args.ref, diffs), indent=1))
    else:
        print(diff_markdown(args.ref, diffs) if args.format == "markdown" else diff_text(args.ref, diffs))
    return 1 if failing(diffs, args.fail_on) else 0

"""`fxlens check PATH...`: files and folders, traced in parallel on warm workers, unchanged files served
from the cache, the findings in the format asked. Exit status 0 clean, 1 errors found, 2 usage or
environment (raised as the CLI's error)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import TextIO

from fxlens.ci import fixing
from fxlens.ci.cache import CheckCache, cache_key, default_cache_dir, fxlens_code, torch_version
from fxlens.ci.findings import Finding, with_fixes
from fxlens.ci.findings import findings as file_findings
from fxlens.ci.formats import FORMATS, render
from fxlens.ci.parallel import default_jobs, trace_all
from fxlens.ci.shards import parse_shard, read_costs, record_costs, split
from fxlens.ci.tree import files_to_check
from fxlens.engine.fixes import explained, fixes_at
from fxlens.engine.worker_client import TraceOptions, WorkerUnavailable
from fxlens.report import DEFAULT_LEVELS, LEVELS, FileReport, in_ladder_order


class Progress:
    """`files done / total` on a terminal's stderr, redrawn in place; silent anywhere else (CI logs)."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.shown = total > 0 and stream.isatty()

    def step(self, *_: object) -> None:
        self.done += 1
        if self.shown:
            self.stream.write(f"\rfxlens: {self.done}/{self.total} files")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def add_arguments(check: argparse.ArgumentParser) -> None:
    check.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders to search for Module files")
    check.add_argument(
        "--level",
        choices=LEVELS,
        action="append",
        metavar="LEVEL",
        help=f"check this level (repeat for several; default: {', '.join(DEFAULT_LEVELS)})",
    )
    check.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), json, github (workflow annotations) or sarif (code scanning)",
    )
    check.add_argument("-o", "--output", metavar="FILE", help="write the findings here instead of stdout")
    check.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=default_jobs(),
        metavar="N",
        help="files traced at once, one warm worker each (default: the number of cores)",
    )
    check.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip paths matching this glob (repeat; `.gitignore` is always respected)",
    )
    check.add_argument(
        "--cache-dir",
        default=default_cache_dir(),
        help="where reports of unchanged files are kept (default: %(default)s; env FXLENS_CACHE_DIR)",
    )
    check.add_argument("--no-cache", action="store_true", help="trace every file, keep nothing")
    check.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="under each internal error of fxlens, the Python traceback to send with a bug report",
    )
    check.add_argument(
        "--shard",
        metavar="K/N",
        help="check only the K-th of N stable parts of the files "
        "(split by path hash, or balanced by the cache's recorded costs); join them with `fxlens merge`",
    )
    fixing.add_arguments(check)


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def _lookup(
    texts: dict[str, str], cache: CheckCache, key_of: Callable[[str], str]
) -> tuple[dict[str, str], dict[str, FileReport]]:
    keys = {path: key_of(path) for path in texts}
    hits: dict[str, FileReport] = {}
    for path, key in keys.items():
        report = cache.get(key)
        if report is not None:
            hits[path] = report
    return keys, hits


def run_check(args: argparse.Namespace, usage_error: Callable[[str], Exception]) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise usage_error(f"no such file: {missing[0]}")
    if args.jobs < 1:
        raise usage_error("-j/--jobs must be at least 1")
    levels = in_ladder_order(args.level) if args.level else DEFAULT_LEVELS
    # surface "check": the fixes' words are the CLI's, and no shape is shown, so the worker names no size B or T
    # and exports grown sizes only where a specialisation hint could come of it (worker/levels/size_probe.py)
    fixes = args.fix or args.diff or args.show_fixes
    options = TraceOptions.from_flags(args, levels, surface="check", cost=False, fixes=fixes)
    workspace = os.getcwd()
    files = files_to_check(args.paths, args.exclude, workspace)
    cache = CheckCache(None if args.no_cache else args.cache_dir)
    if args.shard:
        try:
            index, count = parse_shard(args.shard)
        except ValueError as error:
            raise usage_error(str(error)) from error
        by_name = {_shard_name(path): path for path in files}
        files = [by_name[name] for name in split(list(by_name), count, read_costs(cache.folder))[index - 1]]
    texts = {path: _read(path) for path in files}
    torch, code = (torch_version(args.python), fxlens_code()) if cache.folder else ("", "")
    keys, reports = _lookup(
        texts, cache, lambda p: cache_key(p, texts[p], workspace, options, args.python, torch, code)
    )
    progress = Progress(len(files))
    for _ in reports:
        progress.step()
    misses = [(path, texts[path], [workspace]) for path in files if path not in reports]
    # the costliest first (costs.json is kept across fxlens and torch versions): a long file started last
    # would leave the other workers idle while it runs alone
    costs = read_costs(cache.folder)
    misses.sort(key=lambda miss: costliest_first(costs.get(_shard_name(miss[0])), miss[1]))
    try:
        traced = asyncio.run(trace_all(misses, args.python, options, args.jobs, progress.step))
    except WorkerUnavailable as error:
        raise usage_error(error.terminal_text()) from error
    finally:
        progress.close()
    for path, report in traced.items():
        cache.put(keys[path], report)
    record_costs(
        cache.folder,
        {
            _shard_name(path): sum(level.seconds for cls in report.classes for level in cls.levels.values())
            for path, report in traced.items()
        },
    )
    reports.update(traced)
    if args.diff:
        count = fixing.print_diffs(texts, reports)
        print(f"{len(files)} file(s) checked, {count} proven fix(es) shown, nothing written", file=sys.stderr)
        return 1 if count else 0
    applied = 0
    if args.fix:
        reports, applied = fixing.apply_in_place(texts, reports)
        texts = {path: _read(path) for path in files}
    elif fixes:
        reports = {path: explained(report) for path, report in reports.items()}
    findings: list[Finding] = []
    for path in files:
        found = file_findings(os.path.relpath(path), reports[path].all_diagnostics(), texts[path].split("\n"))
        if fixes and not args.fix:  # (after --fix the findings left have no fix to offer)
            found = with_fixes(found, partial(fixes_at, reports[path]), texts[path].split("\n"))
        findings += found
    errors = sum(f.diagnostic.severity == "error" for f in findings)
    summary = {
        "files": len(files),
        "traced": len(traced),
        "cached": len(files) - len(traced),
        "errors": errors,
        "warnings": sum(f.diagnostic.severity == "warning" for f in findings),
        "jobs": args.jobs,
    }
    _emit(render(args.format, findings, summary, verbose=args.verbose), args.output)
    if not files:
        print(f"fxlens: no Python file defining an nn.Module under {', '.join(args.paths)}", file=sys.stderr)
    cached = f" ({summary['cached']} from the cache)" if summary["cached"] else ""
    fixed = f", {applied} fixed" if args.fix else ""
    print(f"{len(files)} file(s) checked{cached}, {errors} error(s){fixed}", file=sys.stderr)
    return 1 if errors else 0


def costliest_first(recorded: float | None, text: str) -> tuple[int, float]:
    """Sort key: files never traced before (by their length: more source, more classes to trace), then the
    recorded costs, each from the largest down."""
    return (0, -len(text)) if recorded is None else (1, -recorded)


def _shard_name(path: str) -> str:
    """The name a shard knows a file by: the same on every machine of a CI matrix."""
    return os.path.relpath(path).replace(os.sep, "/")


def _emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    elif text:
        print(text)

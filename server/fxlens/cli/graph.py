"""`fxlens graph FILE... [--class NAME] [--level LEVEL ...] [--json]`: each Module class's graph, level by level,
file by file."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypedDict

from fxlens.cli.files import USAGE_ERROR, CliError, load_error, read_file, syntax_error
from fxlens.engine.worker_client import TraceOptions, WorkerClient, WorkerUnavailable
from fxlens.messages import TRACES_AT_ONCE
from fxlens.render.graph_text import diagnostics_text, level_text
from fxlens.render.ladder import rung
from fxlens.report import (
    DEFAULT_LEVELS,
    LEVEL_INFO,
    LEVELS,
    ClassReport,
    FileReport,
    InputSpec,
    in_ladder_order,
    to_json,
)

_LEVELS_HELP = "; ".join(f"{info.name}: {info.what}" for info in LEVEL_INFO).replace("%", "%%")


# `fxlens graph --json`, one object per class and level (the schema: docs/cli.md)
class _InputJson(TypedDict):
    name: str
    shape: list[int | str] | None
    dtype: str | None


class InputJson(_InputJson, total=False):  # the keys an input has only when they say something
    value: str
    parts: list[InputJson]
    keyword: bool
    source: str


class InputsJson(TypedDict):
    source: str
    built: str
    detail: str
    tensors: str
    tensors_reason: str
    directive: str
    sizes: dict[str, int]
    args: list[InputJson]


# ("class" is a keyword: the functional form; the report objects as report.to_json writes them)
LevelJson = TypedDict(
    "LevelJson",
    {
        "file": str,
        "class": str,
        "level": str,
        "ok": bool,
        "note": str,
        "inputs": InputsJson,
        "nodes": list[dict[str, Any]],
        "diagnostics": list[dict[str, Any]],
        "schemas": dict[str, dict[str, Any]],
        "cost": dict[str, Any] | None,
        "rung": str | None,
        "scopes": dict[str, dict[str, Any]],
        "frames": list[dict[str, Any]],
        "dynamic": dict[str, Any] | None,
    },
)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    graph = sub.add_parser("graph", help="print the graph of each Module class")
    several = "several: one worker traces them all, each class under its file"
    graph.add_argument("file", nargs="+", metavar="FILE", help=f"a Python file ({several})")
    graph.add_argument(
        "--class", dest="cls", action="append", metavar="CLS", help="only this class (repeat for several)"
    )
    graph.add_argument(
        "--level",
        choices=LEVELS,
        action="append",
        metavar="LEVEL",
        help=f"this level (repeat for several; default: {', '.join(DEFAULT_LEVELS)}). {_LEVELS_HELP}",
    )
    graph.add_argument("--json", action="store_true", help="machine-readable output (schema in docs/cli.md)")
    common(graph)
    graph.set_defaults(run=cmd_graph)


async def _analyse_files(
    paths: list[str], python: str, options: TraceOptions, classes: list[str] | None = None
) -> list[FileReport]:
    """Each file's report, in the order given, from one worker: one start of an interpreter importing torch for
    them all, as many files in flight as the worker traces at once (a file past those would wait in its queue and
    cut short the costs of one that is done)."""
    client = WorkerClient(python)
    try:
        await client.start()
    except WorkerUnavailable as error:
        raise CliError(error.terminal_text()) from error
    in_flight = asyncio.Semaphore(TRACES_AT_ONCE)
    # run from a repository's root, as `python -m` would be: its packages (and `src/`) import
    roots = [os.getcwd()]

    async def one(path: str) -> FileReport:
        async with in_flight:
            return await client.analyse(path, read_file(path), options, classes=classes, roots=roots)

    try:
        return list(await asyncio.gather(*(one(path) for path in paths)))
    finally:
        await client.stop()


def _inputs_json(report: ClassReport) -> InputsJson:
    def one(spec: InputSpec) -> InputJson:
        written: InputJson = {"name": spec.name, "shape": spec.shape, "dtype": spec.dtype}
        if spec.value:
            written["value"] = spec.value
        if spec.parts is not None:
            written["parts"] = [one(part) for part in spec.parts]
        if spec.keyword:
            written["keyword"] = True
        if spec.source:
            written["source"] = spec.source
        return written

    return {
        "source": report.build.inputs_source,
        "built": report.build.how,
        "detail": report.build.detail,
        "tensors": report.build.tensors,
        "tensors_reason": report.build.tensors_reason,
        "directive": report.build.directive,
        "sizes": report.build.sizes,
        "args": [one(i) for i in report.build.inputs],
    }


def level_json(path: str, report: ClassReport, level: str) -> LevelJson:
    result = report.levels[level]
    return {
        "file": path,
        "class": report.name,
        "level": level,
        "ok": result.ok,
        "note": result.note,
        "inputs": _inputs_json(report),
        "nodes": [to_json(n) for n in result.nodes],
        "diagnostics": [to_json(d) for d in result.diagnostics],
        "schemas": result.schemas,
        "cost": to_json(report.cost),
        "rung": rung(result).name if result.ok else None,
        "scopes": result.scopes,
        "frames": [to_json(frame) for frame in result.frames],
        "dynamic": to_json(result.dynamic),
    }


def _shown_classes(report: FileReport, wanted: list[str] | None) -> list[ClassReport]:
    """The classes of one file to print (none when the classes `wanted` are other files'); a file that cannot be
    graphed raises CliError, saying why."""
    syntax = syntax_error(report)
    if syntax:
        raise CliError(f"syntax error: {syntax}")
    load = load_error(report)
    if load and not report.classes:
        raise CliError(f"the file failed to load:\n{load}")
    if not report.classes and not report.module_classes:
        problems = diagnostics_text(report.path, [d for d in report.diagnostics if d.severity == "error"])
        raise CliError(f"no nn.Module class in {report.path}" + (f"\n{problems}" if problems else ""))
    return [c for c in report.classes if wanted is None or c.name in wanted]


def _file_text(report: FileReport, classes: list[ClassReport], levels: tuple[str, ...]) -> str:
    text = "\n\n".join(level_text(report.path, c, level) for c in classes for level in levels)
    file_level = [d for d in report.diagnostics if d.severity in ("error", "warning")]
    return text + ("\n\n" + diagnostics_text(report.path, file_level) if file_level else "")


Shown = list[tuple[FileReport, list[ClassReport]]]  # each file graphed, with the classes to print


def _shown(reports: list[FileReport], wanted: list[str] | None) -> tuple[Shown, list[str]]:
    """What to print of each file, and why a file cannot be graphed (the others are still shown), or why a class
    `wanted` cannot (it is in none of the files)."""
    shown: Shown = []
    problems: list[str] = []
    for report in reports:
        try:
            shown.append((report, _shown_classes(report, wanted)))
        except CliError as problem:
            problems.append(str(problem))
        # how the file got past a package `__init__` that failed: said on stderr, whatever the output format
        for note in (d for d in report.diagnostics if d.category == "load" and d.severity != "error"):
            print(diagnostics_text(report.path, [note]).splitlines()[0], file=sys.stderr)
    if wanted is None:
        return shown, problems
    found = {c.name for _, classes in shown for c in classes}
    missing = [name for name in wanted if name not in found]
    if shown and missing:
        has = "; ".join(
            f"{report.path} (it has: {', '.join(report.module_classes or [c.name for c in report.classes])})"
            for report, _ in shown
        )
        names = " or ".join(repr(name) for name in missing)
        problems.append(f"no Module class {names} in {has}")
    # the files of other classes say nothing
    return [(report, classes) for report, classes in shown if classes], problems


def cmd_graph(args: argparse.Namespace) -> int:
    levels = in_ladder_order(args.level) if args.level else DEFAULT_LEVELS
    options = TraceOptions.from_flags(args, levels)
    for path in args.file:  # a file that is not there stops the command before any worker starts
        read_file(path)
    # with --class, the worker builds and traces only what those classes need
    reports = asyncio.run(_analyse_files(args.file, args.python, options, args.cls))
    shown, problems = _shown(reports, args.cls)
    traced = [(report, c, level) for report, classes in shown for c in classes for level in levels if level in c.levels]
    if shown and args.json:
        objects = [level_json(report.path, c, level) for report, c, level in traced]
        print(json.dumps(objects[0] if len(objects) == 1 else objects, indent=1))
    elif shown:
        several = len(reports) > 1  # each file's classes under its name, as `head` and `tail` do
        print(
            "\n\n".join(
                (f"==> {report.path} <==\n" if several else "") + _file_text(report, classes, levels)
                for report, classes in shown
            )
        )
    for problem in problems:
        print(f"fxlens: {problem}", file=sys.stderr)
    if problems:
        return USAGE_ERROR
    return 0 if all(c.levels[level].ok for _, c, level in traced) else 1

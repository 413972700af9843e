"""`fxlens graph`, `fxlens check`, `fxlens serve`: the terminal and CI face of fxlens."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Optional

from fxlens import cli_pass, orphans
from fxlens.cli_files import CliError, load_error, read_file, syntax_error
from fxlens.ci.check import add_arguments as add_check_arguments, run_check
from fxlens.ci.diff import add_arguments as add_diff_arguments, run_diff
from fxlens.ci.merge import add_arguments as add_merge_arguments, run_merge
from fxlens.engine.worker_client import TraceOptions, WorkerClient, WorkerUnavailable
from fxlens.render.graph_text import diagnostics_text, level_text
from fxlens.render.ladder import rung
from fxlens.report import DEFAULT_LEVELS, LEVEL_INFO, LEVELS, ClassReport, FileReport, InputSpec, in_ladder_order, to_json

USAGE_ERROR = 2
_LEVELS_HELP = "; ".join(f"{info.name}: {info.what}" for info in LEVEL_INFO).replace("%", "%%")


async def _analyse_files(paths: list[str], python: str, options: TraceOptions,
                         classes: Optional[list[str]] = None) -> list[FileReport]:
    client = WorkerClient(python)
    try:
        await client.start()
    except WorkerUnavailable as error:
        raise CliError(f"{error.message}\n  fix: {error.fix}" if error.fix else error.message) from error
    try:
        # run from a repository's root, as `python -m` would be: its packages (and `src/`) import
        roots = [os.getcwd()]
        return [await client.analyse(path, read_file(path), options, classes=classes, roots=roots) for path in paths]
    finally:
        await client.stop()


def _inputs_json(report: ClassReport) -> dict:
    def one(spec: InputSpec) -> dict:
        return {"name": spec.name, "shape": spec.shape, "dtype": spec.dtype, **({"value": spec.value} if spec.value else {}),
                **({"parts": [one(part) for part in spec.parts]} if spec.parts is not None else {}),
                **({"keyword": True} if spec.keyword else {}), **({"source": spec.source} if spec.source else {})}

    return {"source": report.build.inputs_source, "built": report.build.how, "detail": report.build.detail,
            "tensors": report.build.tensors, "tensors_reason": report.build.tensors_reason,
            "directive": report.build.directive, "sizes": report.build.sizes,
            "args": [one(i) for i in report.build.inputs]}


def level_json(report: ClassReport, level: str) -> dict:
    result = report.levels[level]
    return {"class": report.name, "level": level, "ok": result.ok, "note": result.note,
            "inputs": _inputs_json(report), "nodes": [to_json(n) for n in result.nodes],
            "diagnostics": [to_json(d) for d in result.diagnostics], "schemas": result.schemas,
            "cost": to_json(report.cost), "rung": rung(result).name if result.ok else None,
            "scopes": result.scopes}


def cmd_graph(args: argparse.Namespace) -> int:
    levels = in_ladder_order(args.level) if args.level else DEFAULT_LEVELS
    options = TraceOptions(levels=levels, execution=args.execution, timeout=args.timeout, surface="cli")
    read_file(args.file)
    # with --class, the worker builds and traces only what that class needs
    (report,) = asyncio.run(_analyse_files([args.file], args.python, options, [args.cls] if args.cls else None))
    syntax = syntax_error(report)
    if syntax:
        raise CliError(f"syntax error: {syntax}")
    load = load_error(report)
    if load and not report.classes:
        raise CliError(f"the file failed to load:\n{load}")
    if not report.classes and not report.module_classes:
        problems = diagnostics_text(report.path, [d for d in report.diagnostics if d.severity == "error"])
        raise CliError(f"no nn.Module class in {args.file}" + (f"\n{problems}" if problems else ""))
    # how the file got past a package `__init__` that failed: said on stderr, whatever the output format
    for note in (d for d in report.diagnostics if d.category == "load" and d.severity != "error"):
        print(diagnostics_text(report.path, [note]).splitlines()[0], file=sys.stderr)
    classes = report.classes
    if args.cls:
        classes = [c for c in classes if c.name == args.cls]
        if not classes:
            names = ", ".join(report.module_classes or [c.name for c in report.classes])
            raise CliError(f"no Module class {args.cls!r} in {args.file} (it has: {names})")
    if args.json:
        objects = [level_json(c, level) for c in classes for level in levels if level in c.levels]
        print(json.dumps(objects[0] if len(objects) == 1 else objects, indent=1))
    else:
        print("\n\n".join(level_text(report.path, c, level) for c in classes for level in levels))
        file_level = [d for d in report.diagnostics if d.severity in ("error", "warning")]
        if file_level:
            print("\n" + diagnostics_text(report.path, file_level))
    failed = any(not c.levels[level].ok for c in classes for level in levels if level in c.levels)
    return 1 if failed else 0


def cmd_check(args: argparse.Namespace) -> int:
    return run_check(args, CliError)


def cmd_diff(args: argparse.Namespace) -> int:
    return run_diff(args, CliError)


def cmd_merge(args: argparse.Namespace) -> int:
    return run_merge(args, CliError)


def cmd_serve(args: argparse.Namespace) -> int:
    from fxlens.lsp.server import serve

    return serve(tcp=args.tcp)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="fxlens", description="See what torch.fx makes of your nn.Module.")
    sub = root.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--python", default=sys.executable,
                       help="interpreter that has torch (default: the one running fxlens)")
        p.add_argument("--execution", choices=("safe", "full"), default="safe",
                       help="safe: run only imports and definitions (default); full: run the whole file but __main__")
        p.add_argument("--timeout", type=float, default=120.0, help="seconds per file (default 120)")

    graph = sub.add_parser("graph", help="print the graph of each Module class")
    graph.add_argument("file")
    graph.add_argument("--class", dest="cls", help="only this class")
    graph.add_argument("--level", choices=LEVELS, action="append", metavar="LEVEL",
                       help=f"this level (repeat for several; default: {', '.join(DEFAULT_LEVELS)}). {_LEVELS_HELP}")
    graph.add_argument("--json", action="store_true", help="machine-readable output (schema in README)")
    common(graph)
    graph.set_defaults(run=cmd_graph)

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

    cli_pass.register(sub, common)

    serve = sub.add_parser("serve", help="run the language server")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdio (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead, for debugging")
    serve.set_defaults(run=cmd_serve)
    return root


def main(argv: Optional[list[str]] = None) -> int:
    args = parser().parse_args(argv)
    # what a killed worker's traces leave comes up here, not to init, and ends when the worker does
    # (engine/worker_client.py): every child of this process is fxlens's own
    orphans.adopt()
    try:
        return args.run(args)
    except CliError as error:
        print(f"fxlens: {error}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # `fxlens graph ... | head`: the reader has all it wanted
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

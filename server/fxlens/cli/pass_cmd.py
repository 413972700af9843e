"""`fxlens pass FILE --class NAME --pass NAME [--json]` and `fxlens pass FILE --list`.

Exit status: 0 when the pass ran and kept the results (equal, close) or is a quantization pass (its
change is expected and reported as numbers); 1 when it changes the results of a pass meant to keep
them, or fails (raises, leaves a graph that does not lint, returns no GraphModule); 2 for what the
user must fix first (no such file, class or pass).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable

from fxlens.cli.files import CliError, load_error, read_file, syntax_error
from fxlens.engine.worker_client import TraceOptions, WorkerClient, WorkerUnavailable
from fxlens.messages import PassRequest
from fxlens.pass_catalog import BUILTIN_PASSES, all_passes, builtin, user_passes
from fxlens.pass_report import PassReport, info_to_json, pass_to_json
from fxlens.render.pass_text import pass_list, pass_markdown
from fxlens.report import FileReport


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Callable[[argparse.ArgumentParser], None]
) -> None:
    parser = sub.add_parser("pass", help="run a graph pass on a Module class: before → after, and the proof")
    parser.add_argument("file")
    parser.add_argument("--class", dest="cls", help="the Module class to run it on")
    parser.add_argument(
        "--pass",
        dest="pass_name",
        metavar="NAME",
        help=f"a built-in ({', '.join(p.name for p in BUILTIN_PASSES)}) or a `# fxlens: pass` function",
    )
    parser.add_argument("--pass-file", metavar="PATH", help="the file defining the user pass (default: FILE)")
    parser.add_argument("--list", action="store_true", help="list the built-in passes and FILE's own")
    parser.add_argument("--json", action="store_true", help="machine-readable output (schema in docs/passes.md)")
    common(parser)
    parser.set_defaults(run=cmd_pass)


async def _run(args: argparse.Namespace, text: str, request: PassRequest) -> tuple[FileReport, PassReport | None]:
    client = WorkerClient(args.python)
    try:
        await client.start()
    except WorkerUnavailable as error:
        raise CliError(error.terminal_text()) from error
    try:
        options = TraceOptions.from_flags(args, ("fx",))
        return await client.run_pass(args.file, text, options, args.cls, request, roots=[os.getcwd()])
    finally:
        await client.stop()


def cmd_pass(args: argparse.Namespace) -> int:
    text = read_file(args.file)
    if args.list:
        infos = all_passes(os.path.abspath(args.file), text)
        if args.pass_file:
            infos += user_passes(os.path.abspath(args.pass_file), read_file(args.pass_file))
        print(json.dumps([info_to_json(i) for i in infos], indent=1) if args.json else pass_list(infos))
        return 0
    if not args.cls or not args.pass_name:
        raise CliError("`fxlens pass` needs --class NAME and --pass NAME (or --list)")
    pass_path = os.path.abspath(args.pass_file or args.file)
    pass_text = read_file(pass_path) if args.pass_file else text
    if builtin(args.pass_name):
        request = PassRequest(args.pass_name, "builtin")
    elif any(p.name == args.pass_name for p in user_passes(pass_path, pass_text)):
        request = PassRequest(args.pass_name, "user", pass_path, pass_text)
    else:
        names = ", ".join(p.name for p in all_passes(pass_path, pass_text))
        raise CliError(
            f"no pass {args.pass_name!r} (there are: {names}); mark a function with a "
            "`# fxlens: pass` comment above its `def`"
        )
    report, found = asyncio.run(_run(args, text, request))
    problem = syntax_error(report) or load_error(report)
    if found is None:
        if problem:
            raise CliError(problem)
        if args.cls not in report.module_classes:
            raise CliError(f"no Module class {args.cls!r} in {args.file} (it has: {', '.join(report.module_classes)})")
        raise CliError("the pass did not report: " + "; ".join(d.message for d in report.diagnostics))
    print(
        json.dumps(pass_to_json(found), indent=1) if args.json else pass_markdown(found),
        end="" if not args.json else "\n",
    )
    return exit_status(found)


def exit_status(report: PassReport) -> int:
    return 1 if not report.ok or (report.changes_results and not report.quantization) else 0

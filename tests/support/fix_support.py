"""What the tests of fixes share: a file's report with fixes asked for, through the worker as `fxlens check` asks,
and a source text loaded as a module, to run the original and the fixed class side by side in torch."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.fix_report import Fix
from fxlens.report import FileReport


def report_with_fixes(path: Path, levels: tuple[str, ...], text: str | None = None) -> FileReport:
    """The worker's report on `path` (or on `text` in its place) at `levels`, fixes proven."""

    async def go() -> FileReport:
        client = WorkerClient()
        await client.start()
        try:
            options = TraceOptions(levels=levels, surface="check", cost=False, fixes=True, timeout=600)
            return await client.analyse(str(path), path.read_text() if text is None else text, options)
        finally:
            await client.stop()

    return asyncio.run(go())


def load_text(name: str, text: str) -> ModuleType:
    """`text` run as the module `name` (registered first: dynamo inlines a child's forward only from one)."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return module


def only_fix(report: FileReport, class_name: str) -> Fix:
    (fix,) = report.find_class(class_name).fixes
    return fix


def only_class(text: str, name: str) -> str:
    """The file's text with its other classes left out (their lines blank: the class keeps its line numbers)."""
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name != name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines[first - 1 : node.end_lineno] = ["\n"] * (node.end_lineno - first + 1)
    return "".join(lines)

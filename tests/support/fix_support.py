"""What the tests of fixes share: a file's report with fixes asked for, through the worker as `fxlens check` asks
(or in this process, where a test swaps the rewrite table), a rewrite of the enclosing `if` for such a swapped
table, and a source text loaded as a module, to run the original and the fixed class side by side in torch."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from fxlens import messages
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.fix_report import Fix
from fxlens.report import FileReport
from fxlens.worker.analysis.analyse import Analysis
from fxlens.worker.fixes import Entry, where
from fxlens.worker.fixes.sites import Rewrite, Site, replace_range


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


def fx_fixes_in_process(path: Path, classes: list[str] | None = None) -> list[Fix]:
    """The fixes of `path`'s classes (or of `classes`) at fx, analysed in this process: a rewrite table a test
    swapped with monkeypatch is the one used."""
    request = messages.TraceRequest(
        str(path), text=path.read_text(), levels=["fx"], cost=False, fixes=True, classes=classes
    )
    events: list[messages.Event] = []
    Analysis(request).run(events.append)
    return [f for e in events if isinstance(e, messages.ClassTraced) for f in e.read().fixes]


def if_replaced(name: str, text_of: Callable[[Site, ast.If], str]) -> Entry:
    """A rewrite table entry at the sites `where` takes, that replaces the enclosing `if` by `text_of(site, if)`."""

    def rewrite(site: Site) -> Rewrite | None:
        found = next(iter(site.enclosing(ast.If)), None)
        if found is None:
            return None
        return Rewrite(name, "", [replace_range(site.text, found, found, text_of(site, found))])

    return Entry(name, where.applies, rewrite)


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

"""A file that cannot import says how to fix it in the words of where it is read: the editor's workspace
folders and `fxlens.python` setting in the editor, the current directory and `--python` in the CLI."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.lsp.settings import Settings
from fxlens_command import fxlens

ROOT = Path(__file__).resolve().parents[3]
INITS = ROOT / "tests" / "fixtures" / "inits"
USES_TOOLS = INITS / "uses_tools.py"


def _load_fix(surface: str) -> str:
    async def run() -> str:
        client = WorkerClient(sys.executable)
        await client.start()
        try:
            report = await client.analyse(
                str(USES_TOOLS),
                USES_TOOLS.read_text(),
                TraceOptions(levels=("fx",), surface=surface),
                roots=[str(INITS)],
            )
        finally:
            await client.stop()
        [error] = [d for d in report.diagnostics if d.category == "load"]
        return error.fix

    return asyncio.run(run())


def test_the_editor_is_told_of_its_folders_and_its_setting_the_cli_of_its_directory_and_flag():
    assert Settings().trace_options().surface == "editor"  # what the language server asks for
    editor, cli = _load_fix("editor"), _load_fix("cli")
    assert editor == (
        "fxlens imports your file as Python would from the workspace folders and their `src/`: "
        "open your project's root folder in the editor, or install the missing package in the "
        "interpreter fxlens uses (the `fxlens.python` setting)."
    )
    assert cli == (
        "fxlens imports your file as Python would from the current directory and its `src/`: run "
        "fxlens from your project's root, or install the missing package in the interpreter fxlens "
        "uses (`--python`)."
    )


def test_fxlens_graph_prints_the_clis_words():
    run = fxlens("graph", "uses_tools.py", "--level", "fx", cwd=INITS)
    said = run.stdout + run.stderr
    assert "fix: fxlens imports your file as Python would from the current directory" in said, said
    assert "(`--python`)" in said and "fxlens.python" not in said and "workspace folders" not in said

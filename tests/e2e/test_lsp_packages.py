"""pytest-lsp end to end in a package workspace: an unsaved edit of one module shows in the graph of
the open module that imports it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_harness import ROOT, Doc, capabilities, config
from lsprotocol import types
from pygls.uris import from_fs_path

pytestmark = pytest.mark.asyncio(loop_scope="function")

REPOSITORY = ROOT / "tests" / "fixtures" / "packages" / "segmentation"


def open_file(client, path: Path) -> Doc:
    doc = Doc(client, path, path.read_text())
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=doc.uri, language_id="python", version=doc.version, text=doc.text)
        )
    )
    return doc


def fx_title(lenses: list[types.CodeLens]) -> str:
    return next(lens.command.title for lens in lenses if lens.command.title.startswith("fx "))


async def test_an_unsaved_edit_of_an_imported_module_retraces_the_module_that_imports_it(tmp_path):
    workspace = Path(
        shutil.copytree(REPOSITORY, tmp_path / "segmentation", ignore=shutil.ignore_patterns("__pycache__"))
    )
    client = await config().start()
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(workspace)), name="segmentation")],
            )
        )
        model = open_file(client, workspace / "seg" / "unet" / "model.py")
        await model.traced()
        assert not [d for d in model.diagnostics() if d.code == "load"]
        before = fx_title(await model.lenses())
        parts = open_file(client, workspace / "seg" / "unet" / "blocks.py")
        await parts.traced()

        record = client.fx
        reports_of_model = lambda: [r for r in record.reports if r["uri"] == model.uri and r["complete"]]  # noqa: E731
        seen = len(reports_of_model())
        on_disk = parts.path.read_text()
        parts.change(parts.text.replace("        return self.body(x)", "        return self.body(x) * 0.5"))
        await record.until(lambda: len(reports_of_model()) > seen, "model.py traced again after parts.py changed")

        after = fx_title(await model.lenses())
        count = lambda title: int(title.split()[1])  # noqa: E731  "fx 123 · aten 130"
        assert count(after) == count(before) + 7  # a multiplication in each of the 7 ConvStages
        assert parts.path.read_text() == on_disk  # nothing was saved
        await client.shutdown_session()
    finally:
        await client.stop()

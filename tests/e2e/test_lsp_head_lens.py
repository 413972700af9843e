"""The "vs HEAD" lens (`fxlens.diffLens`): off by default; on, a class whose buffer graph differs from
the last commit's gets `vs HEAD: +N nodes, ...`, an unchanged class gets none."""

from __future__ import annotations

import subprocess

import pytest
import pytest_lsp
from lsp_harness import Doc, config, start
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

COMMITTED = """import torch
from torch import nn


# fxlens: Net()(torch.randn(2, 8))
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


# fxlens: Same()(torch.randn(2, 8))
class Same(nn.Module):
    def forward(self, x):
        return x * 2
"""
EDITED = COMMITTED.replace(
    "        self.fc = nn.Linear(8, 8)\n", "        self.fc = nn.Linear(8, 8)\n        self.out = nn.Linear(8, 8)\n"
).replace("return torch.relu(self.fc(x))", "return self.out(torch.relu(self.fc(x)))")


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _repo(folder) -> None:
    (folder / "model.py").write_text(COMMITTED)
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


async def _head_titles(doc: Doc) -> dict[int, str]:
    return {
        lens.range.start.line: lens.command.title
        for lens in await doc.lenses()
        if lens.command.title.startswith("vs HEAD")
    }


async def test_vs_head_lens_follows_the_setting(client: LanguageClient, tmp_path):
    _repo(tmp_path)
    path = tmp_path / "model.py"
    doc = Doc(client, path, EDITED)  # the buffer has an unsaved edit: a second layer in Net
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=from_fs_path(str(path)), language_id="python", version=1, text=EDITED
            )
        )
    )
    await doc.traced()
    assert await _head_titles(doc) == {}  # off by default

    refreshes = client.fx.lens_refreshes
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxlens": {"diffLens": True}})
    )
    await client.fx.until(lambda: client.fx.lens_refreshes > refreshes, "a lens refresh after the setting changed")
    titles = {}

    async def head_lens_in() -> bool:
        titles.update(await _head_titles(doc))
        return bool(titles)

    while not await head_lens_in():  # the HEAD version is traced once, then the lenses are refreshed
        seen = client.fx.lens_refreshes
        await client.fx.until(
            lambda seen=seen: client.fx.lens_refreshes > seen, "a lens refresh with the HEAD baseline"
        )
    # fx: + call_module out; aten: + 2 parameters and a linear — the largest change is shown
    assert titles == {5: "vs HEAD: +3 nodes"}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fxlens": {}}))

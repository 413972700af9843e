"""pytest-lsp end to end: the inductor level asked for in the settings, on the lens, in the hover (each line's
kernels, what they fuse, a link opening the code) and through `fxlens.kernelCode`, after fx and aten."""

from __future__ import annotations

import os
import stat
from urllib.parse import unquote

import pytest
import pytest_asyncio
import pytest_lsp
from lsp_harness import command, config, open_doc, start
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEVELS = ["fx", "aten", "inductor"]
RELU, GATE = 13, 14  # `y = torch.relu(self.up(x))`, `z = torch.sigmoid(y) * y + 1`


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": LEVELS})
    yield
    await lsp_client.shutdown_session()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def traced(client, tmp_path_factory):
    doc = open_doc(client, "kernels.py", tmp_path_factory.mktemp("inductor"))
    await doc.traced()
    return doc


async def test_inductor_arrives_after_fx_and_aten(client, traced):
    seen = [
        level
        for kind, what in client.fx.sequence
        if kind == "report" and what["uri"] == traced.uri and what["className"]
        for level in what["levels"] or []
    ]
    assert seen.index("inductor") > max(seen.index("fx"), seen.index("aten")), seen


async def test_the_lens_counts_the_kernels(client, traced):
    titles = [lens.command.title for lens in await traced.lenses()]
    assert any("inductor 4 kernels (2 fused, 2 extern)" in t for t in titles), titles


async def test_a_lines_hover_names_its_kernels_what_they_fuse_and_links_their_code(client, traced):
    text = await traced.hover(traced.at(GATE, "sigmoid"))
    assert "**inductor**: line 14 runs in 1 kernel (CPU, C++; a GPU's Triton kernels differ)" in text, text
    row = next(r for r in text.splitlines() if "cpp_fused_add_mul_relu_sigmoid_0" in r)
    assert "generated kernel: sigmoid, mul, add" in row and "fused with line 13" in row
    link = row[row.index("(command:fxlens.showKernel?") + len("(command:fxlens.showKernel?") : row.rindex(")")]
    assert unquote(link) == f'["{traced.uri}", "Gate", "cpp_fused_add_mul_relu_sigmoid_0:2"]'
    relu = await traced.hover(traced.at(RELU, "relu"))
    assert "extern_kernels.addmm` library call: addmm" in relu and "fused with line 14" in relu


async def test_kernel_code_opens_read_only_at_the_kernel(client, traced):
    payload = await command(client, "fxlens.kernelCode", traced.uri, "Gate", "cpp_fused_add_mul_relu_sigmoid_0:2")
    assert payload["ok"] and payload["kind"] == "fused" and payload["language"] == "python"
    lines = payload["code"].split("\n")
    assert lines[payload["line"] - 1].startswith("cpp_fused_add_mul_relu_sigmoid_0 = async_compile.cpp_pybinding(")
    assert lines[payload["end_line"] - 1] == "''')" and 'extern "C"' in "\n".join(
        lines[payload["line"] : payload["end_line"]]
    )
    extern = await command(client, "fxlens.kernelCode", traced.uri, "Gate", "extern_kernels.addmm:1")
    assert extern["code"].split("\n")[extern["line"] - 1].strip().startswith("extern_kernels.addmm(")
    # for clients without a code view: a read-only file, shown with the kernel selected
    shown = await command(client, "fxlens.kernelCode", traced.uri, "Gate", "cpp_fused__softmax_1:4", True)
    path = to_fs_path(shown["document"])
    assert open(path).read() == shown["code"] and not os.stat(path).st_mode & (
        stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    )
    missing = await command(client, "fxlens.kernelCode", traced.uri, "Gate", "cpp_fused_nothing_9:9")
    assert not missing["ok"] and "cpp_fused__softmax_1:4" in missing["message"]

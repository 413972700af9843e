"""pytest-lsp end to end: a class's cost (parameters, FLOPs forward and backward) is counted after the
trace is complete, so fx and aten never wait for it; when it comes the lens is refreshed and the lens
and the class hover show it, as FlopCounterMode counts it run directly."""

from __future__ import annotations

import importlib.util

import pytest
import pytest_lsp
import torch
from fxlens.render.cost import flops_text
from lsp_harness import FIXTURES, config, open_doc, start
from pytest_lsp import LanguageClient
from torch.utils.flop_counter import FlopCounterMode

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENCODER_LINE = 6  # `class Encoder(nn.Module):` in two_models.py


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"levels": ["fx", "aten"]})
    yield
    await lsp_client.shutdown_session()


def _raw_encoder_flops() -> int:
    spec = importlib.util.spec_from_file_location("two_models", FIXTURES / "two_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        encoder = module.Encoder()
    with FlopCounterMode(display=False) as forward:
        out = encoder(torch.randn(2, 8, device="meta"))
    with FlopCounterMode(display=False) as backward:
        out.sum().backward()
    return forward.get_total_flops() + backward.get_total_flops()


async def test_the_cost_comes_after_the_complete_report_and_the_lens_then_shows_it(client, tmp_path):
    doc = open_doc(client, "two_models.py", tmp_path)
    await doc.traced()
    record = client.fx
    await record.until(
        lambda: {r["className"] for r in record.reports if r["uri"] == doc.uri and r["cost"]} >= {"Encoder", "Head"},
        "the costs of Encoder and Head",
    )
    ours = [
        (kind, what)
        for kind, what in record.sequence
        if kind == "lens-refresh" or (kind == "report" and what["uri"] == doc.uri)
    ]
    complete = next(
        i for i, (kind, what) in enumerate(ours) if kind == "report" and what["complete"] and what["levels"]
    )
    first_cost = next(i for i, (kind, what) in enumerate(ours) if kind == "report" and what["cost"])
    assert complete < first_cost  # fx and aten of every class, and `done`, before any cost
    assert all(not what["levels"] for kind, what in ours if kind == "report" and what["cost"])
    # the editor is asked for the lenses again (the refresh request may follow the cost's notification)
    await record.until(
        lambda: any(kind == "lens-refresh" for kind, _ in record.sequence[record.sequence.index(ours[first_cost]) :]),
        "a lens refresh after the first cost",
    )

    lenses = await doc.lenses()
    summary = next(
        lens.command.title
        for lens in lenses
        if lens.range.start.line == ENCODER_LINE - 1 and lens.command.title.startswith("fx ")
    )
    assert summary.endswith(" · " + flops_text(_raw_encoder_flops())), summary
    hover = await doc.hover(doc.at(ENCODER_LINE, "Encoder"))
    assert "parameters: 36" in hover  # Linear(8, 4): 8·4 + 4, counted with the cost

"""A buffer's text goes to the worker once per version; a worker that lost it (restarted, or its store
full) says so and gets it again, and the trace is the same as torch's either way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import torch
from fxlens.engine.worker_client import TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "tests" / "fixtures" / "lsp" / "two_models.py"
OPTIONS = TraceOptions(levels=("fx",), cost=False)


def _raw_fx_nodes() -> list[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("two_models", MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [n.name for n in torch.fx.symbolic_trace(module.Head()).graph.nodes]


def test_each_text_crosses_once_and_a_lost_one_is_sent_again():
    text, neighbour = MODELS.read_text(), "WIDTH = 4\n"
    neighbour_path = str(MODELS.with_name("neighbour_of_two_models.py"))

    async def go():
        client = WorkerClient()
        await client.start()
        try:
            bodies: list[int] = []  # the texts' raw bytes written to the worker
            write = client._texts.write
            client._texts.write = lambda data: (
                None if data.startswith(b'{"type": "text"') else bodies.append(len(data)),
                write(data),
            )
            first = await client.analyse(str(MODELS), text, OPTIONS, buffers={neighbour_path: neighbour})
            sent_first = list(bodies)
            second = await client.analyse(str(MODELS), text, OPTIONS, buffers={neighbour_path: neighbour})
            sent_second = bodies[len(sent_first) :]
            # the worker loses the text (as a restarted one would have it): the request names a key it lacks
            client._texts._held[id(text)] = (text, "lost-by-the-worker")
            third = await client.analyse(str(MODELS), text, OPTIONS, buffers={neighbour_path: neighbour})
            return first, second, third, sent_first, sent_second
        finally:
            await client.stop()

    first, second, third, sent_first, sent_second = asyncio.run(go())
    assert sorted(sent_first) == sorted([len(text.encode()), len(neighbour.encode())]) and sent_second == []
    for report in (first, second, third):
        assert [n.name for n in report.find_class("Head").levels["fx"].nodes] == _raw_fx_nodes()

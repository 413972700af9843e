"""The aten level names free sizes (B, T) from two static exports matched by node name; where the second
export fails or gives another graph, the example's sizes stay and a note says why."""

from __future__ import annotations

import asyncio

import pytest
from fxlens.engine.worker_client import TraceOptions, WorkerClient

MODULES = """import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc(x).relu()


class FixedBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc(x).view(2, 8)


class BatchBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        y = self.fc(x)
        if x.shape[0] > 3:
            y = y * 2
        return y
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("aten_sizes") / "sizes.py"
    path.write_text(MODULES)

    async def analyse():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(path), MODULES, TraceOptions(levels=("aten",)))
        finally:
            await client.stop()

    return asyncio.run(analyse())


def _aten(report, name):
    result = report.find_class(name).levels["aten"]
    assert result.ok, result.diagnostics
    return result, {n.name: n for n in result.nodes}


def test_inferred_batch_is_named_in_every_shape(report):
    assert [i.shape for i in report.find_class("Mlp").build.inputs] == [["B", 16]]
    result, nodes = _aten(report, "Mlp")
    assert nodes["x"].shape == ["B", 16] and nodes["linear"].shape == ["B", 8] and nodes["relu"].shape == ["B", 8]
    assert nodes["p_fc_weight"].shape == [8, 16]  # not a free size: stays a number
    assert result.note == ""


def test_a_module_that_only_takes_the_example_batch_keeps_its_sizes(report):
    result, nodes = _aten(report, "FixedBatch")
    assert nodes["view"].shape == [2, 8] and nodes["linear"].shape == [2, 8]
    assert "sizes are the example's" in result.note and "failed" in result.note


def test_a_graph_that_changes_with_the_batch_keeps_the_example_sizes(report):
    result, nodes = _aten(report, "BatchBranch")
    assert "mul" not in nodes  # the example (batch 2) takes no branch
    assert nodes["linear"].shape == [2, 8]
    assert "different graph" in result.note

"""A standby child warms up on the last export's graph: torch's FakeTensor cache then holds every kernel the next
export of that class needs, and what fxlens reports does not change."""

from __future__ import annotations

import asyncio
import linecache
import os
import signal
import sys
from pathlib import Path

import pytest
import torch
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.messages import child_event
from fxlens.worker.levels.aten import export_example
from fxlens.worker.process import jobs
from fxlens.worker.process.warm_up import _program, recipe, warm_up
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

ROOT = Path(__file__).resolve().parents[3]
TINY_GPT = ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py"


class Mixed(nn.Module):
    """Views, a split into a tuple, factory kwargs (dtype, device), a buffer and a lifted constant."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.register_buffer("shift", torch.zeros(16))

    def forward(self, x):
        y = self.fc(x) + self.shift
        h = y.view(2, 2, 16).transpose(1, 2).contiguous()
        first, _ = y.chunk(2, dim=-1)
        steps = torch.arange(4, dtype=torch.float32, device=x.device)
        return torch.relu(h).sum() + first.mean() + steps.sum()


def _on_meta(make):
    with torch.device("meta"):
        return make()


def _tiny_gpt():
    namespace: dict = {}
    exec(compile(TINY_GPT.read_text(), str(TINY_GPT), "exec"), namespace)
    model = _on_meta(lambda: namespace["GPT"](namespace["GPTConfig"]()))
    return model, (torch.zeros(2, 8, dtype=torch.long, device="meta"),)


MODELS = {"mixed": lambda: (_on_meta(Mixed), (torch.randn(4, 8, device="meta"),)), "tiny_gpt": _tiny_gpt}


def _no_request() -> int:
    read_fd, _write_fd = os.pipe()
    return read_fd  # (the write end stays open: nothing is ever waiting on it)


def _export(model, inputs):
    """As the aten level exports (on fake CPU tensors made from the meta ones)."""
    return export_example(model, inputs, {}, None).value


@pytest.mark.parametrize("name", MODELS)
def test_a_warmed_up_export_finds_every_kernel_in_the_cache(name):
    model, inputs = MODELS[name]()
    graph_recipe = recipe(_export(model, inputs), 0.1)
    assert graph_recipe is not None

    FakeTensorMode.cache.clear()
    FakeTensorMode.cache_misses = 0
    _export(model, inputs)
    assert FakeTensorMode.cache_misses > 0  # a cold cache: the warm-up below has something to do

    FakeTensorMode.cache.clear()
    assert warm_up([graph_recipe], _no_request()) == 1
    FakeTensorMode.cache_hits = FakeTensorMode.cache_misses = 0
    _export(model, inputs)
    assert FakeTensorMode.cache_misses == 0 and FakeTensorMode.cache_hits > 0


@pytest.mark.parametrize("name", MODELS)
def test_the_warm_up_program_runs_the_exported_ops(name):
    model, inputs = MODELS[name]()
    original = _export(model, inputs)
    rebuilt = _export(*_program(recipe(original, 0.1)))
    ops = [[str(n.target) for n in ep.graph.nodes if n.op == "call_function"] for ep in (original, rebuilt)]
    assert ops[0] == ops[1]


def test_a_model_with_a_higher_order_op_gives_no_recipe():
    class NoGradInside(nn.Module):
        def forward(self, x):
            with torch.no_grad():
                y = x * 2
            return y + x

    assert recipe(_export(NoGradInside(), (torch.randn(2, 4, device="meta"),)), 0.1) is None


def test_a_broken_recipe_warms_nothing_and_raises_nothing():
    broken = [
        {
            "placeholders": [],
            "nodes": [{"name": "y", "target": "no_such_op.default", "args": [], "kwargs": {}}],
            "seconds": 0.0,
        },
        {
            "placeholders": [
                {
                    "name": "x",
                    "kind": "USER_INPUT",
                    "shape": [2],
                    "stride": [1],
                    "dtype": "nope",
                    "requires_grad": False,
                }
            ],
            "nodes": [],
            "seconds": 0.0,
        },
    ]
    assert warm_up(broken, _no_request()) == 0


def test_a_recipe_too_big_to_be_worth_it_is_not_exported():
    from fxlens.worker.process.warm_up import MAX_NODES

    chain = [
        {"name": f"relu_{i}", "target": "relu.default", "args": [{"node": f"relu_{i - 1}" if i else "x"}], "kwargs": {}}
        for i in range(MAX_NODES)
    ]
    x = {"name": "x", "kind": "USER_INPUT", "shape": [2], "stride": [1], "dtype": "float32", "requires_grad": False}
    output = {"name": "output", "target": "output", "args": [{"node": chain[-1]["name"]}], "kwargs": {}}
    assert warm_up([{"placeholders": [x], "nodes": [*chain, output], "seconds": 0.0}], _no_request()) == 0
    assert (
        warm_up(
            [{"placeholders": [x], "nodes": [*chain[:10], {**output, "args": [{"node": "relu_9"}]}], "seconds": 0.0}],
            _no_request(),
        )
        == 1
    )


def test_a_waiting_request_stops_the_warm_up():
    model, inputs = MODELS["mixed"]()
    graph_recipe = recipe(_export(model, inputs), 0.1)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"{}\n")
    assert warm_up([graph_recipe], read_fd) == 0


def test_the_worker_keeps_the_first_recipes_that_fit_in_the_warm_up_time():
    recipes = [{"name": name, "seconds": seconds} for name, seconds in (("a", 0.1), ("b", 0.1), ("c", 0.1), ("d", 0))]
    assert [r["name"] for r in jobs.worth_warming_up(recipes)] == ["a", "b"]
    assert jobs.worth_warming_up([{"seconds": 1.0}, {"seconds": 0.0}]) == []
    assert len(jobs.worth_warming_up([{"seconds": 0.0}] * 100)) == jobs.MAX_RECIPES


@pytest.mark.parametrize(
    "event",
    [
        b'{"event": "warm-up-recipe", "recipe": 1}',
        b'{"event": "warm-up-recipe", "recipe": {"placeholders": [], "nodes": "x", "seconds": 0}}',
        b'{"event": "warm-up-recipe"}',
    ],
)
def test_the_worker_ignores_a_malformed_recipe(event):
    assert child_event(event) is None


async def test_a_warmed_up_trace_reports_what_a_fresh_one_does(tmp_path):
    worker = WorkerClient()
    await worker.start()
    try:
        path = str(tmp_path / "tiny_gpt.py")
        # the first trace runs in a standby with nothing to warm up, the second in one that warmed up the first
        fresh, warmed_up = [await worker.analyse(path, TINY_GPT.read_text(), TraceOptions()) for _ in range(2)]
    finally:
        await worker.stop()

    def levels(report):
        return {
            (c.name, level.level): [(n.name, n.target, n.shape, n.dtype, n.line, n.users) for n in level.nodes]
            for c in report.classes
            for level in c.levels.values()
        }

    assert levels(fresh) == levels(warmed_up)
    assert len(levels(fresh)) == 2 * 5 and all(levels(fresh).values())  # every class, fx and aten


def test_the_probe_traces_every_level_of_both_its_classes_and_leaves_nothing_behind():
    from fxlens.messages import ClassTraced, TraceRequest
    from fxlens.worker.analysis.analyse import Analysis
    from fxlens.worker.process.warm_up import PROBE, PROBE_PATH, _trace_probe

    path, modules = list(sys.path), set(sys.modules)
    _trace_probe()
    assert sys.path == path and set(sys.modules) == modules and PROBE_PATH not in linecache.cache

    events: list = []
    Analysis(TraceRequest(PROBE_PATH, text=PROBE, levels=["fx", "aten"])).run(events.append)
    levels = {
        (c.name, name): level.ok
        for c in (e.read() for e in events if isinstance(e, ClassTraced))
        for name, level in c.levels.items()
    }
    assert levels == {(c, level): True for c in ("Probe", "ProbeBlock") for level in ("fx", "aten")}


def test_an_exported_program_a_recipe_cannot_read_gives_none_not_an_error():
    # (an ExportedProgram of another torch version may lack what this one has)
    assert recipe(object(), 0.1) is None


def _standby_of(worker_pid: int) -> int:
    with open(f"/proc/{worker_pid}/task/{worker_pid}/children") as children:
        for pid in map(int, children.read().split()):
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().strip() == "fxlens-standby":
                    return pid
    return 0


async def test_a_standby_child_killed_while_it_waits_is_replaced_and_the_next_trace_runs(tmp_path):
    worker = WorkerClient()
    info = await worker.start()
    try:
        path = str(tmp_path / "tiny_gpt.py")
        await worker.analyse(path, TINY_GPT.read_text(), TraceOptions())
        # the worker forks the next standby once idle: wait for it to exist, then kill it
        while not (standby := _standby_of(info.pid)):
            await asyncio.sleep(0.01)
        os.kill(standby, signal.SIGKILL)
        again = await worker.analyse(path, TINY_GPT.read_text(), TraceOptions())
    finally:
        await worker.stop()
    assert [d.message for d in again.diagnostics if d.severity == "error"] == []
    assert {c.name for c in again.classes} == {"LayerNorm", "CausalSelfAttention", "MLP", "Block", "GPT"}

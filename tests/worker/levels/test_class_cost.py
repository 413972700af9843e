"""The class line's cost against torch itself: parameters, FlopCounterMode's forward and backward totals
run directly on the same module (meta tensors, as fxlens counts them), and the bytes torch.compile's
min-cut partition saves for backward."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from pathlib import Path

import pytest
import torch
from fxlens.engine.worker_client import Listeners, TraceAsk, TraceOptions, WorkerClient
from fxlens.render.hover import hover_text
from fxlens.render.lens import class_lenses
from fxlens_command import fxlens
from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch.utils.flop_counter import FlopCounterMode
from torch_reference import analyse_one

ROOT = Path(__file__).resolve().parents[3]
MLP = ROOT / "tests" / "fixtures" / "backward" / "mlp.py"
GPT = ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_flops(instance, *inputs) -> tuple[int, int]:
    """FlopCounterMode's totals, run directly: the forward, then the backward of out.sum()."""
    with FlopCounterMode(display=False) as forward:
        out = instance(*inputs)
    with FlopCounterMode(display=False) as backward:
        out.sum().backward()
    return forward.get_total_flops(), backward.get_total_flops()


class _SumLoss(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).sum()


def _torch_saved_bytes(instance, x) -> int:
    with contextlib.ExitStack() as stack:
        joint = aot_export_joint_with_descriptors(stack, _SumLoss(instance), (x,)).graph_module
        forward, _ = min_cut_rematerialization_partition(joint, None, compiler="inductor", num_fwd_outputs=1)
    output = next(iter(forward.graph.find_nodes(op="output")))
    return sum(n.meta["val"].numel() * n.meta["val"].element_size() for n in output.args[0][1:])


@pytest.fixture(scope="module")
def mlp():
    return analyse_one(MLP, ("fx", "aten", "backward"))


def test_linear_relu_linear_costs_what_torch_counts_and_saves(mlp):
    cost = mlp.find_class("MLP").cost
    with torch.device("meta"):
        instance = _load(MLP).MLP()
    x = torch.randn(4, 8, device="meta")
    assert (
        cost.parameters == cost.trainable == sum(p.numel() for p in instance.parameters()) == 8 * 16 + 16 + 16 * 4 + 4
    )
    assert (cost.forward_flops, cost.backward_flops) == _torch_flops(instance, x)
    assert cost.forward_flops == 2 * 4 * 8 * 16 + 2 * 4 * 16 * 4  # two addmms
    assert cost.saved_bytes == _torch_saved_bytes(instance, x)
    saved = [n for n in mlp.find_class("MLP").levels["backward"].nodes if n.saved]
    assert cost.saved_values == len(saved) and cost.saved_bytes == sum(n.bytes for n in saved)


def test_the_class_hover_and_lens_say_it_at_the_example_size(mlp):
    cls = mlp.find_class("MLP")
    text = hover_text(mlp, cls.line, 6, markdown=False)
    assert "parameters: 212" in text
    assert "≈ 1.5 KFLOP forward + 2.0 KFLOP backward at the example size (x: (4, 8))" in text
    assert f"saves {cls.cost.saved_bytes} B for backward (3 values, torch.compile's min-cut partition)" in text
    summary = class_lenses(cls, ("fx", "aten", "backward"))[1]
    # the short lens gives forward + backward; its tooltip the whole cost line
    assert summary.title.endswith(" · 3.6 KFLOP")  # 1.5 + 2.0 rounded, 3,550 FLOP
    assert (
        f"cost: 212 params · 1.5 KFLOP fwd + 2.0 KFLOP bwd · saves {cls.cost.saved_bytes} B at the example "
        "size (x: (4, 8))" in summary.tooltip.splitlines()
    )


def test_a_module_without_parameters_has_no_backward_flops(mlp):
    cost = mlp.find_class("NoParams").cost
    assert (cost.parameters, cost.backward_flops, cost.saved_bytes) == (0, None, None)
    assert cost.forward_flops == 0  # relu and a multiply: FlopCounterMode counts neither


def test_a_gpt_at_its_inferred_sizes_costs_what_flop_counter_mode_counts():
    report = analyse_one(GPT, ("fx", "aten"))
    cls = report.find_class("GPT")
    assert cls.build.sizes == {"B": 2, "T": 8}
    module = _load(GPT)
    with torch.device("meta"):
        instance = module.GPT(module.GPTConfig())
    idx = torch.zeros(2, 8, dtype=torch.long, device="meta")
    assert (cls.cost.forward_flops, cls.cost.backward_flops) == _torch_flops(instance, idx)
    assert cls.cost.parameters == sum(p.numel() for p in instance.parameters())
    assert cls.cost.saved_bytes is None  # the backward level was not asked for
    text = hover_text(report, cls.line, 6, markdown=False)
    assert "at the example size (B=2, T=8)" in text
    # the editor's words (a setting), not the CLI's flag
    assert (
        "saved for backward: the `backward` level is not traced yet (hover again once it is computed, or add "
        "`backward` to the `fxlens.levels` setting)"
        in text
        and "--level" not in text
    )


def test_cli_json_and_header_carry_the_cost():
    run = fxlens("graph", str(MLP), "--class", "MLP", "--level", "backward", "--json")
    assert run.returncode == 0, run.stderr
    cost = json.loads(run.stdout)["cost"]
    assert cost["parameters"] == 212 and cost["forward_flops"] == 1536 and cost["saved_bytes"] > 0
    text = fxlens("graph", str(MLP), "--class", "MLP", "--level", "aten").stdout
    assert text.splitlines()[1] == "cost: 212 params · 1.5 KFLOP fwd + 2.0 KFLOP bwd at the example size (x: (4, 8))"


def test_the_editor_gets_the_report_before_the_costs_and_check_gets_none():
    """The costs are counted after the file's `done`: the report (fx, aten) is there first, each cost
    comes after it, and is what FlopCounterMode counts; `fxlens check`'s options count none."""

    async def go():
        client = WorkerClient()
        await client.start()
        try:
            heard: list[tuple[str, bool]] = []
            arrived = asyncio.Event()
            result = None

            def on_cost(name, fingerprint, cost):
                heard.append((name, result is not None and result.done(), fingerprint, cost))
                arrived.set()

            result = asyncio.ensure_future(
                client.submit(
                    str(MLP), MLP.read_text(), TraceOptions(levels=("fx", "aten")), listeners=Listeners(on_cost=on_cost)
                )
            )
            report = await result
            at_done = {c.name: c.cost for c in report.classes}
            while {name for name, *_ in heard} != set(at_done):
                arrived.clear()
                await arrived.wait()
            unasked = await client.analyse(str(MLP), MLP.read_text(), TraceOptions(levels=("fx", "aten"), cost=False))
            # a class held unchanged whose cost never came (cut short by an edit) gets it, untraced
            again: list[str] = []
            counted = asyncio.Event()
            known = {c.name: c.fingerprint for c in report.classes}
            untraced = await client.submit(
                str(MLP),
                MLP.read_text(),
                TraceOptions(levels=("fx", "aten")),
                TraceAsk(known=known, without_cost=["MLP"]),
                Listeners(on_cost=lambda name, *_: (again.append(name), counted.set())),
            )
            await counted.wait()
            assert sorted(untraced.unchanged) == sorted(known) and again == ["MLP"]
            return report, at_done, heard, unasked
        finally:
            await client.stop()

    report, at_done, heard, unasked = asyncio.run(go())
    assert at_done == {"MLP": None, "NoParams": None, "ScalarLoss": None}  # the report came without them
    assert sorted(name for name, *_ in heard) == ["MLP", "NoParams", "ScalarLoss"]  # once each
    assert all(after for _, after, _, _ in heard)  # every cost after the report
    _name, _, fingerprint, cost = next(h for h in heard if h[0] == "MLP")
    assert fingerprint == report.find_class("MLP").fingerprint
    with torch.device("meta"):
        instance = _load(MLP).MLP()
    assert (cost.forward_flops, cost.backward_flops) == _torch_flops(instance, torch.randn(4, 8, device="meta"))
    assert [c.cost for c in unasked.classes] == [None, None, None] and unasked.find_class("MLP").levels["aten"].ok


SLOW = ROOT / "tests" / "fixtures" / "cost" / "slow_once_reported.py"


def test_the_cost_comes_when_the_trace_used_most_of_its_time_limit():
    """The costs have a time limit of their own from the report on: a trace that took most of its limit (a loaded
    machine) does not take the class's cost away."""

    async def go():
        client = WorkerClient()
        await client.start()
        try:
            arrived = asyncio.Event()
            heard = []
            report = await client.submit(
                str(SLOW),
                SLOW.read_text(),
                TraceOptions(levels=("fx",), timeout=10.0),
                listeners=Listeners(on_cost=lambda name, fingerprint, cost: (heard.append(name), arrived.set())),
            )
            await asyncio.wait_for(arrived.wait(), 60)  # (a safety net: the cost comes ~8 s after the report)
            return report, heard
        finally:
            await client.stop()

    report, heard = asyncio.run(go())
    assert report.find_class("SlowOnceReported").levels["fx"].ok and heard == ["SlowOnceReported"]

"""Overload families and FLOPs of the ATen levels, against torch itself: the schema of the overload each
node calls, its packet's siblings, and the FLOPs FlopCounterMode counts running the module directly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from torch_reference import analyse_one

ROOT = Path(__file__).resolve().parents[3]
LADDER = ROOT / "tests" / "fixtures" / "models" / "ladder.py"
TINY_GPT = ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py"


@pytest.fixture(scope="module")
def ladder():
    return analyse_one(LADDER, ("fx", "aten", "core-aten"), classes=["Net", "PreNorm"])


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_flops(instance: torch.nn.Module, *inputs) -> int:
    """On meta tensors, as fxlens runs (on CPU tensors torch 2.13 runs attention as a flash kernel
    FlopCounterMode does not count; on meta it counts the math path's bmm)."""
    counter = FlopCounterMode(display=False)
    with counter:
        instance.to("meta")(*(i.to("meta") for i in inputs))
    return counter.get_total_flops()


def _sum_node(result):
    return next(n for n in result.nodes if n.target.startswith("aten.sum."))


@pytest.mark.parametrize("level", ["aten", "core-aten"])
def test_the_sum_node_carries_its_overloads_schema_and_siblings(ladder, level):
    result = ladder.find_class("Net").levels[level]
    assert result.ok, result.diagnostics
    node = _sum_node(result)
    overload = getattr(torch.ops.aten.sum, node.overload)
    # torch 2.13 exports `.sum()` as sum.default and decomposes it to sum.dim_IntList
    assert node.target == {"aten": "aten.sum.default", "core-aten": "aten.sum.dim_IntList"}[level]
    entry = result.schemas[node.target]
    assert entry["schema"] == str(overload._schema)
    assert entry["overloads"] == list(torch.ops.aten.sum.overloads())
    assert "dim_IntList" in entry["overloads"] and "default" in entry["overloads"]


def test_every_aten_target_has_one_schema_entry(ladder):
    result = ladder.find_class("PreNorm").levels["core-aten"]
    aten_targets = {n.target for n in result.nodes if n.op == "call_function" and n.target.startswith("aten.")}
    assert set(result.schemas) == aten_targets
    assert (
        str(torch.ops.aten.native_layer_norm.default._schema)
        == result.schemas["aten.native_layer_norm.default"]["schema"]
    )


@pytest.mark.parametrize("level", ["aten", "core-aten"])
@pytest.mark.parametrize(
    "name, inputs", [("Net", lambda: (torch.randn(2, 3),)), ("PreNorm", lambda: (torch.randn(2, 5, 8),))]
)
def test_node_flops_sum_to_flop_counter_on_the_module(ladder, level, name, inputs):
    result = ladder.find_class(name).levels[level]
    expected = _torch_flops(getattr(_module(LADDER), name)(), *inputs())
    assert expected > 0
    assert sum(n.flops or 0 for n in result.nodes) == expected
    matmuls = [n for n in result.nodes if n.target in ("aten.linear.default", "aten.addmm.default")]
    assert matmuls and all(n.flops and n.flops > 0 for n in matmuls)


@pytest.fixture(scope="module")
def gpt():
    return analyse_one(TINY_GPT, ("fx", "aten", "core-aten"), classes=["GPT"])


@pytest.mark.parametrize("level", ["aten", "core-aten"])
def test_a_gpt_s_flops_attention_included_equal_flop_counter_on_the_module(gpt, level):
    cls = gpt.find_class("GPT")
    assert cls.build.directive == "GPT(config=GPTConfig())(torch.zeros(2, 8, dtype=torch.int64))"
    module = _module(TINY_GPT)
    expected = _torch_flops(module.GPT(module.GPTConfig()), torch.zeros(2, 8, dtype=torch.int64))
    assert sum(n.flops or 0 for n in cls.levels[level].nodes) == expected


def test_the_attention_line_s_hover_names_its_overload_and_its_flops_per_instance(gpt):
    from fxlens.render.cost import flops_text
    from fxlens.render.hover import hover_text

    line = next(i for i, text in enumerate(TINY_GPT.read_text().splitlines(), 1) if "scaled_dot_product" in text)
    nodes = [n for n in gpt.find_class("GPT").levels["aten"].nodes if n.line == line and n.scope == "blocks.0.attn"]
    text = hover_text(gpt, line, 12)
    assert f"`{torch.ops.aten.scaled_dot_product_attention.default._schema}`" in text
    assert f"≈ {flops_text(sum(n.flops for n in nodes))} each at the example size (B=2, T=8)" in text
    assert gpt.find_class("GPT").build.sizes == {"B": 2, "T": 8}


@pytest.mark.parametrize(
    "input_shape, weight_shape, bias",
    [
        ((7,), (5, 7), True),
        ((3, 7), (5, 7), True),
        ((3, 7), (5, 7), False),
        ((2, 4, 3, 7), (5, 7), True),
        ((0, 7), (5, 7), True),
        ((3, 7), (7,), False),
    ],
)
def test_a_linear_node_counts_what_flop_counter_counts_running_it(input_shape, weight_shape, bias):
    """aten.linear is counted from its sizes: the count must be FlopCounterMode's running the op."""
    from fxlens.worker.levels.overloads import node_flops

    values = [torch.empty(input_shape, device="meta"), torch.empty(weight_shape, device="meta")]
    if bias:
        values.append(torch.empty(weight_shape[:1], device="meta"))
    graph = torch.fx.Graph()
    placeholders = []
    for i, value in enumerate(values):
        placeholders.append(graph.placeholder(f"x{i}"))
        placeholders[-1].meta["val"] = value
    node = graph.call_function(torch.ops.aten.linear.default, tuple(placeholders))
    node.meta["val"] = torch.ops.aten.linear.default(*values)
    counter = FlopCounterMode(display=False)
    with counter:
        torch.ops.aten.linear.default(*values)
    assert node_flops(node, FlopCounterMode(display=False), {}) == counter.get_total_flops()

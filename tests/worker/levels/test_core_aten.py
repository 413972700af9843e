"""The core-aten level against torch itself: `ep.run_decompositions()` of the same export, node by node."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from fxlens_command import fxlens
from torch_reference import analyse_one

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from torch_nodes import export_rows  # noqa: E402  (raw torch's node lists, shared with the other levels' tests)

LADDER = ROOT / "tests" / "fixtures" / "models" / "ladder.py"
TINY_GPT = ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py"


@pytest.fixture(scope="module")
def ladder():
    return analyse_one(LADDER, ("fx", "aten", "core-aten"))


@pytest.fixture(scope="module")
def alone():
    """core-aten asked for without aten: the level exports on its own."""
    return analyse_one(LADDER, ("core-aten",))


def _module():
    spec = importlib.util.spec_from_file_location(LADDER.stem, LADDER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _decomposed(instance, inputs):
    return torch.export.export(instance.to("meta"), inputs, strict=False).run_decompositions()


def _rows(result):
    return [(n.name, n.op, n.target, n.num_users, n.line, n.shape, n.dtype) for n in result.nodes]


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(LADDER.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("reports", ["ladder", "alone"])
def test_lesson_net_decomposes_as_torch_does(request, reports):
    result = request.getfixturevalue(reports).find_class("Net").levels["core-aten"]
    assert result.ok
    expected = export_rows(_decomposed(_module().Net(), (torch.randn(2, 3, device="meta"),)), str(LADDER))
    assert _rows(result) == expected
    nodes = {n.target: n for n in result.nodes}
    forward = _line_of("return torch.relu(self.fc(x)).sum()")
    # the linear becomes the weight transposed and a matmul with the bias added, on the forward line
    assert nodes["aten.permute.default"].shape == [3, 4] and nodes["aten.permute.default"].line == forward
    assert nodes["aten.addmm.default"].shape == [2, 4] and nodes["aten.addmm.default"].line == forward
    assert nodes["aten.addmm.default"].overload == "default"
    assert nodes["aten.sum.dim_IntList"].shape == [] and nodes["aten.sum.dim_IntList"].dtype == "float32"
    assert "aten.linear.default" not in nodes


def test_layer_norm_is_native_layer_norm_with_its_tuple_and_getitem(ladder):
    result = ladder.find_class("PreNorm").levels["core-aten"]
    assert result.ok
    expected = export_rows(_decomposed(_module().PreNorm(), (torch.randn(2, 5, 8, device="meta"),)), str(LADDER))
    assert _rows(result) == expected
    norm = next(n for n in result.nodes if n.target == "aten.native_layer_norm.default")
    assert norm.value == "tuple[Tensor(2, 5, 8) float32, Tensor(2, 5, 1) float32, Tensor(2, 5, 1) float32]"
    assert norm.line == _line_of("h = self.norm(x)") and norm.scope == "norm"
    (getitem,) = [n for n in result.nodes if n.target == "operator.getitem"]
    assert norm.users == [getitem.name] and getitem.shape == [2, 5, 8] and getitem.line == norm.line


def test_free_batch_size_reads_B(ladder):
    result = ladder.find_class("Classifier").levels["core-aten"]
    assert result.ok and not result.note
    shapes = {n.target: n.shape for n in result.nodes}
    assert shapes["aten.permute.default"] == [8, 16]  # the weight: no batch in it
    assert shapes["aten.addmm.default"] == ["B", 16] and shapes["aten._softmax.default"] == ["B", 16]


def test_free_batch_and_sequence_sizes_of_a_gpt():
    gpt = analyse_one(TINY_GPT, ("aten", "core-aten"), classes=["GPT"]).find_class("GPT")
    result = gpt.levels["core-aten"]
    assert result.ok and not result.note
    assert result.nodes[-2].shape == ["B", "T", 128]  # the logits, as at the aten level
    assert len(result.nodes) > len(gpt.levels["aten"].nodes)  # decomposed: more, smaller ops
    assert not any(
        n.target.endswith(("linear.default", "layer_norm.default")) and "native" not in n.target for n in result.nodes
    )


def test_failing_export_is_classified_at_its_line(alone, ladder):
    result = alone.find_class("Gate").levels["core-aten"]
    assert not result.ok
    (diagnostic,) = result.diagnostics
    assert (diagnostic.category, diagnostic.level, diagnostic.line) == (
        "data-dependent-control-flow",
        "core-aten",
        _line_of("if x.sum() > 0:"),
    )
    assert diagnostic.explanation and diagnostic.fix
    # with the aten level in the same trace, its diagnostic says it once; core-aten says why it has nothing
    both = ladder.find_class("Gate")
    assert not both.levels["core-aten"].ok and not both.levels["core-aten"].diagnostics
    assert "aten level's export failed" in both.levels["core-aten"].note
    assert [d.category for d in both.levels["aten"].diagnostics] == ["data-dependent-control-flow"]


def test_cli_graph_core_aten_json_is_the_documented_schema():
    import json

    run = fxlens("graph", str(LADDER), "--class", "Net", "--level", "core-aten", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert (data["class"], data["level"], data["ok"]) == ("Net", "core-aten", True)
    assert {"note", "inputs", "nodes", "diagnostics"} <= data.keys()
    addmm = next(n for n in data["nodes"] if n["target"] == "aten.addmm.default")
    assert (
        addmm["shape"] == [2, 4] and addmm["overload"] == "default" and addmm["line"] == _line_of("return torch.relu")
    )
    failing = fxlens("check", str(LADDER), "--level", "core-aten")
    assert failing.returncode == 1
    assert f"ladder.py:{_line_of('if x.sum() > 0:')}:" in failing.stdout and "(Gate, core-aten)" in failing.stdout

"""The report against torch itself: same nodes, ops, targets, users, shapes and source lines."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from fxlens.engine.worker_client import TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from torch_nodes import export_rows, fx_rows  # noqa: E402  (raw torch's node lists, shared with bench/reach.py)

MODELS = ROOT / "tests" / "fixtures" / "models"
FILES = {
    "seed": MODELS / "seed.py",
    "corpus": MODELS / "corpus.py",
    "convnet": MODELS / "convnet.py",
    "failures": MODELS / "failures.py",
    "tiny_gpt": MODELS / "tiny_gpt.py",
    "example": ROOT / "examples" / "residual_mlp.py",
}
# classes with a `# fxlens:` directive that both torch levels trace
TRACEABLE = [
    ("seed", "Seed"),
    ("corpus", "Wrapped"),
    ("corpus", "TwoHeads"),
    ("corpus", "Attention"),
    ("corpus", "Outer"),
    ("convnet", "DirectedConvNet"),
    ("example", "ResidualMLP"),
    ("failures", "UsesItem"),
]


@pytest.fixture(scope="module")
def reports():
    async def analyse_all():
        client = WorkerClient()
        await client.start()
        try:
            return {
                key: await client.analyse(str(path), path.read_text(), TraceOptions()) for key, path in FILES.items()
            }
        finally:
            await client.stop()

    return asyncio.run(analyse_all())


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)  # the name fxlens gives it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _directive_example(path: Path, class_name: str, device: str = "meta"):
    """Instance and inputs exactly as the directive above the class says, on the meta device (or `device`)."""
    module = _load(path)
    match = re.search(rf"# fxlens: (.*)\n(?:#.*\n)*class {class_name}\b", path.read_text())
    call = ast.parse(match.group(1), mode="eval").body
    evaluate = lambda node: eval(compile(ast.Expression(node), str(path), "eval"), vars(module))  # noqa: E731
    with torch.device(device):
        instance = evaluate(call.func)
        inputs = tuple(evaluate(arg) for arg in call.args)
    return instance, inputs


@pytest.mark.parametrize("file_key,class_name", TRACEABLE)
def test_fx_level_matches_symbolic_trace(reports, file_key, class_name):
    path = FILES[file_key]
    instance, inputs = _directive_example(path, class_name)
    try:
        expected = fx_rows(instance, inputs, str(path))
    except RuntimeError:  # `.item()` on meta: real tensors give the shapes (fxlens's fake run must agree)
        expected = fx_rows(*_directive_example(path, class_name, "cpu"), str(path))
    result = reports[file_key].find_class(class_name).levels["fx"]
    assert result.ok
    assert [(n.name, n.op, n.target, n.num_users, n.line, n.shape, n.dtype) for n in result.nodes] == expected


@pytest.mark.parametrize("file_key,class_name", TRACEABLE)
def test_aten_level_matches_torch_export(reports, file_key, class_name):
    path = FILES[file_key]
    instance, inputs = _directive_example(path, class_name)
    expected = export_rows(torch.export.export(instance, inputs, strict=False), str(path))
    result = reports[file_key].find_class(class_name).levels["aten"]
    assert result.ok
    assert [(n.name, n.op, n.target, n.num_users, n.line, n.shape, n.dtype) for n in result.nodes] == expected


def test_seed_module_counts_and_overloads(reports):
    seed = reports["seed"].find_class("Seed")
    fx_ops = Counter(n.op for n in seed.levels["fx"].nodes)
    assert fx_ops == {
        "placeholder": 1,
        "call_module": 1,
        "get_attr": 1,
        "call_function": 1,
        "call_method": 2,
        "output": 1,
    }
    aten = {n.name: n for n in seed.levels["aten"].nodes}
    assert aten["linear"].target == "aten.linear.default" and aten["linear"].overload == "default"
    assert aten["add"].target == "aten.add.Tensor" and aten["add"].shape == [5, 4]
    fc = next(n for n in seed.levels["fx"].nodes if n.op == "call_module")
    # the fc node covers exactly `self.fc(x)` on line 13
    assert (fc.line, fc.col, fc.end_col) == (13, 12, 22)


def test_child_module_nodes_map_to_the_child_line(reports):
    outer = reports["corpus"].find_class("Outer").levels["fx"]
    sigmoid = [n for n in outer.nodes if n.target == "torch.sigmoid"]
    assert [n.line for n in sigmoid] == [62, 62]  # Inner.forward's line, once per instance
    assert {n.scope for n in sigmoid} == {"a", "b"}
    assert {n.function for n in sigmoid} == {"Inner.forward"}


def test_config_file_traces_every_class_with_real_shapes(reports):
    report = reports["tiny_gpt"]
    names = {c.name for c in report.classes}
    assert names == {"LayerNorm", "CausalSelfAttention", "MLP", "Block", "GPT"}
    for cls in report.classes:
        assert cls.levels["fx"].ok and cls.levels["aten"].ok, cls.name
    gpt = report.find_class("GPT")
    assert gpt.build.how == "config" and gpt.build.inputs_source == "inferred"
    assert [(i.name, i.shape, i.dtype) for i in gpt.build.inputs] == [("tokens", ["B", "T"], "int64")]
    assert gpt.levels["aten"].nodes[-2].shape == ["B", "T", 128]  # the logits
    block = report.find_class("Block")
    assert block.build.how == "parent" and block.built_by == "GPT"
    assert [i.shape for i in block.build.inputs] == [["B", "T", 32]]
    attention = {n.name: n for n in report.find_class("CausalSelfAttention").levels["fx"].nodes}
    assert attention["view"].shape == ["B", "T", 3, 4, 8]  # (batch, length, q/k/v, heads, head width)


def test_inferred_conv_inputs_have_a_symbolic_batch(reports):
    conv = reports["convnet"].find_class("ConvNet")
    assert conv.build.how == "no-arguments" and conv.build.inputs_source == "inferred"
    assert conv.build.inputs[0].shape == ["B", 3, 16, 16]
    head = next(n for n in conv.levels["fx"].nodes if n.target == "head")
    assert head.shape == ["B", 10]


# (class, level, category, line, start column of the offending expression or None)
FAILURE_TABLE = [
    ("DataDependentIf", "fx", "data-dependent-control-flow", 14, 11),
    ("DataDependentIf", "aten", "data-dependent-control-flow", 14, None),
    ("LoopOverDim", "fx", "proxy-iteration", 23, 17),
    ("UsesLen", "fx", "builtin-on-proxy", 38, 12),
    ("AssertsShape", "fx", "data-dependent-control-flow", 45, 15),
    ("UsesNumpy", "fx", "item/numpy", 52, 16),
    ("Encoder", "fx", "library-internal", 57, None),
]


@pytest.mark.parametrize("class_name,level,category,line,col", FAILURE_TABLE)
def test_failure_table_rows_point_at_the_line(reports, class_name, level, category, line, col):
    result = reports["failures"].find_class(class_name).levels[level]
    assert not result.ok and not result.nodes
    (diagnostic,) = result.diagnostics
    assert (diagnostic.category, diagnostic.line, diagnostic.severity) == (category, line, "error")
    if col is not None:
        assert diagnostic.col == col
    assert diagnostic.explanation and diagnostic.fix


@pytest.mark.parametrize("class_name", ["LoopOverDim", "UsesLen", "AssertsShape", "UsesNumpy", "Encoder", "UsesItem"])
def test_constructs_that_only_break_fx_still_export(reports, class_name):
    assert reports["failures"].find_class(class_name).levels["aten"].ok


def test_item_keeps_the_graph_and_its_shapes_from_fake_tensors(reports):
    uses_item = reports["failures"].find_class("UsesItem")
    result = uses_item.levels["fx"]
    assert [n.target for n in result.nodes if n.op == "call_method"] == ["max", "item"]
    assert not result.diagnostics  # the meta device's limit is not the user's problem
    assert next(n for n in result.nodes if n.target == "operator.mul").shape == [3, 8]
    assert uses_item.build.tensors == "fake" and "meta device cannot" in uses_item.build.tensors_reason


def test_spans_functions_and_directive_line(reports):
    seed = reports["seed"].find_class("Seed")
    shift = next(n for n in seed.levels["fx"].nodes if n.op == "get_attr")
    assert (shift.line, shift.col, shift.end_col) == (13, 25, 35)  # exactly `self.shift`
    linear = next(n for n in seed.levels["aten"].nodes if n.name == "linear")
    assert linear.function == "Seed.forward"  # export's own stack trace says only `forward`
    assert seed.directive_line == 5
    assert reports["tiny_gpt"].find_class("GPT").directive_line is None

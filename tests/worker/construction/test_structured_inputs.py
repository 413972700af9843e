"""Inputs shaped by how forward uses its parameters (worker/construction/forward_uses.py, structured.py):
several inputs that must agree, a tuple unpacked, an Optional mask forward checks for None, a dict read by
keys, a `forward(*args, **kwargs)` handing everything on. Each class's aten graph equals raw torch's export on
the inputs the report lists (its directive)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fxlens.worker.construction import forward_uses
from torch_reference import analyse, expected, load, reported

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "solved"
SEVERAL = FIXTURES / "several_inputs.py"


@pytest.fixture(scope="module")
def several():
    return analyse([SEVERAL], levels=("fx", "aten"))["several_inputs"]


@pytest.fixture(scope="module")
def module():
    return load(SEVERAL)


def _inputs(cls):
    return [(spec.name, spec.shape or spec.value, spec.dtype, spec.source) for spec in cls.build.inputs]


def _same_as_torch(report, cls, levels=("aten",)):
    for level in levels:
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
        assert reported(cls, level) == expected(SEVERAL, report, cls, level), level


def test_inputs_that_must_agree_get_one_width_and_the_rank_their_use_fixes(several):
    cls = several.find_class("QueryDecoder")
    assert [(name, shape) for name, shape, _, _ in _inputs(cls)] == [
        ("memory", ["B", "T", 32]),
        ("pos_embed", ["B", "T", 32]),
        # `query_embed.unsqueeze(0).repeat(B, 1, 1)`: the code adds the batch itself
        ("query_embed", ["T", 32]),
    ]
    assert _inputs(cls)[2][3].endswith("rank 2 as forward uses it")
    _same_as_torch(several, cls, ("fx", "aten"))


def test_a_tuple_forward_unpacks_gets_one_tensor_per_name(several):
    cls = several.find_class("PointPrompts")
    [(name, value, _, source)] = _inputs(cls)
    # the labels go to an Embedding (ids); the coordinates share their leading sizes and meet a (2, 16) matrix
    assert name == "points" and value == "tuple[Tensor(B, T, 2) float32, Tensor(B, T) int64]"
    assert "solved from forward's own checks" in source
    _same_as_torch(several, cls, ("fx", "aten"))


def test_an_optional_mask_forward_checks_for_none_is_none_first(several):
    cls = several.find_class("MaskedHead")
    assert [(name, shape) for name, shape, _, _ in _inputs(cls)] == [("feats", ["B", 16, 16, 16]), ("ignore", "None")]
    assert _inputs(cls)[1][3] == "forward checks it for None: None first"
    _same_as_torch(several, cls)
    assert "masked_fill" not in {n.target.split(".")[1] for n in cls.levels["aten"].nodes if n.op == "call_function"}


def test_a_dict_gets_the_keys_forward_reads(several):
    cls = several.find_class("BatchDict")
    [(name, value, _, _)] = _inputs(cls)
    assert name == "batch" and value.startswith("dict[features: Tensor(2, 12) float32, weight: Tensor(")
    _same_as_torch(several, cls, ("fx", "aten"))


def test_args_and_kwargs_are_followed_into_the_method_they_are_handed_to(several, module):
    cls = several.find_class("MaskedEncoder")
    assert [(name, shape) for name, shape, _, _ in _inputs(cls)] == [("args[0]", ["B", 3, 16, 16])]
    _same_as_torch(several, cls)
    # torch.fx cannot trace `*args` either: the fx level fails as symbolic_trace does
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(module.MaskedEncoder())
    assert not cls.levels["fx"].ok


def test_uses_read_from_the_source(module):
    with torch.device("meta"):
        encoder, head, prompts = module.MaskedEncoder(), module.MaskedHead(), module.PointPrompts()
    assert forward_uses.handed_on(encoder) == encoder.forward_features
    assert forward_uses.handed_on(head) is None
    uses = forward_uses.uses(head.forward)
    assert uses["ignore"].optional and uses["ignore"].dtype is torch.bool and uses["feats"].layer == "conv"
    points = forward_uses.uses(prompts.forward)
    assert points["points"].items == ["coords", "labels"] and points["points.labels"].layer == "label_embed"


MODEL = """
import torch.nn as nn


class PooledNet(nn.Module):
    def __init__(self, width=8, classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))
"""
TEST = """
import torch
from models import PooledNet


def test_output_shape():
    net = PooledNet()
    x = torch.randn(1, 3, 40, 40)
    assert net(x).shape == (1, 4)
"""


def test_sizes_a_test_file_beside_the_model_shows_come_first(tmp_path):
    (tmp_path / "models.py").write_text(MODEL)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_models.py").write_text(TEST)
    report = analyse([tmp_path / "models.py"], levels=("aten",))["models"]
    cls = report.find_class("PooledNet")
    [spec] = cls.build.inputs
    assert (spec.shape, spec.source) == (
        ["B", 3, 40, 40],
        "as `test_models.py` calls it: `torch.randn(1, 3, 40, 40)` (line 8)",
    )
    assert cls.levels["aten"].ok
    assert reported(cls, "aten") == expected(tmp_path / "models.py", report, cls, "aten")


def test_channels_are_solved_where_an_operator_needs_the_images_sides_as_numbers(several):
    """A transposed convolution and a pad take no symbolic sides: the sides stay as guessed, the skip
    connection's channels are still solved (8, so that 8 + 8 meet the fusing convolution's 16)."""
    cls = several.find_class("SkipMerge")
    shapes = [shape for _, shape, _, _ in _inputs(cls)]
    assert shapes == [[2, 16, 16, 16], [2, 8, 16, 16]]
    assert _inputs(cls)[1][3].endswith("solved from forward's own checks")
    _same_as_torch(several, cls, ("fx", "aten"))

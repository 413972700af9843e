"""Inputs that are no single tensor, shaped by how forward uses them (worker/construction/forward_uses.py,
structured.py): a list walked beside a list of layers, a `forward(*args, flag=..., **kwargs)` handing its inputs
on. Each class's graphs equal raw torch's on the inputs the report lists."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fxlens.worker.construction import forward_uses
from torch_reference import analyse, expected, load, reported

FILE = Path(__file__).resolve().parents[2] / "fixtures" / "solved" / "input_structures.py"


@pytest.fixture(scope="module")
def report():
    return analyse([FILE], levels=("fx", "aten"))["input_structures"]


@pytest.fixture(scope="module")
def module():
    return load(FILE)


def _inputs(cls):
    return [(spec.name, spec.shape or spec.value, spec.source) for spec in cls.build.inputs]


def _same_as_torch(report, cls, levels=("aten",)):
    for level in levels:
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
        assert reported(cls, level) == expected(FILE, report, cls, level), level


def test_a_list_walked_beside_a_list_of_layers_gets_one_map_per_layer(report):
    cls = report.find_class("PyramidHead")
    [(name, value, source)] = _inputs(cls)
    # each map has the channels of its own lateral convolution
    assert name == "maps" and value == (
        "tuple[Tensor(B, 8, 16, 16) float32, Tensor(B, 16, 16, 16) float32, Tensor(B, 32, 16, 16) float32]"
    )
    assert source == "`maps[0]` first used by Conv2d"
    _same_as_torch(report, cls)


def test_inputs_handed_on_past_a_flag_reach_the_method_they_are_handed_to(report, module):
    cls = report.find_class("FlaggedEncoder")
    assert [(name, shape) for name, shape, _ in _inputs(cls)] == [("args[0]", ["B", 3, 16, 16])]
    _same_as_torch(report, cls)
    with torch.device("meta"):
        encoder = module.FlaggedEncoder()
    assert forward_uses.handed_on(encoder) == encoder.forward_features


def test_uses_read_from_the_source(module):
    with torch.device("meta"):
        head = module.PyramidHead()
    assert forward_uses.uses(head.forward)["maps"].layers == "lateral"


def test_a_size_annotated_as_ints_is_a_tuple_of_ints(report):
    cls = report.find_class("GridPositions")
    assert _inputs(cls) == [("size", "(16, 16)", "annotated with ints: (16, 16)")]
    _same_as_torch(report, cls, ("fx", "aten"))


def test_a_constructor_tuple_of_two_ints_is_guessed_as_two_ints_and_an_optional_input_as_none(report):
    cls = report.find_class("EmptyPrompt")
    assert cls.build.how == "guessed" and "grid_size=(" in cls.build.detail
    assert _inputs(cls) == [("masks", "None", "forward checks it for None: None first")]
    _same_as_torch(report, cls)


def test_the_condition_of_an_if_that_raises_is_solved_the_other_way(report):
    """`if x.shape[1] != self.channels: raise`: assuming the condition holds runs into the raise, so its
    negation is what the model takes: 12 channels."""
    cls = report.find_class("CheckedNorm")
    [(name, shape, source)] = _inputs(cls)
    assert name == "x" and shape[1] == 12 and source.endswith("solved from forward's own checks")
    _same_as_torch(report, cls)

"""Classes whose arguments only another file of the package supplies (a factory, a config table) are built
by that file's call, with their layer counts shrunk, labelled with the call; their graphs are torch's own
for the same construction."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch_reference import analyse

WORKSPACE = Path(__file__).resolve().parents[2] / "fixtures" / "workspace"
BLOCKS = WORKSPACE / "zoo" / "blocks.py"


@pytest.fixture(scope="module")
def report():
    return analyse([BLOCKS], levels=("fx", "aten"), roots=[str(WORKSPACE)])[BLOCKS.stem]


@pytest.fixture(scope="module")
def zoo():
    sys.path.insert(0, str(WORKSPACE))
    try:
        import zoo.blocks as blocks

        return blocks
    finally:
        sys.path.remove(str(WORKSPACE))


def _fx(module):
    return [
        (n.op, n._pretty_print_target(n.target) if n.op == "call_function" else str(n.target))
        for n in torch.fx.symbolic_trace(module).graph.nodes
    ]


def _aten(module, *inputs):
    return [(n.op, str(n.target)) for n in torch.export.export(module, inputs, strict=False).graph.nodes]


def _mine(cls, level):
    return [(n.op, n.target) for n in cls.levels[level].nodes]


def test_the_classes_cannot_be_built_from_their_own_file(zoo):
    for cls in (zoo.Decoder, zoo.Tower, zoo.Mixer):
        with pytest.raises(TypeError):
            cls()


def test_a_factory_in_another_file_builds_the_class_with_its_layers_shrunk(report, zoo):
    decoder = report.find_class("Decoder")
    assert decoder.build.how == "found"
    assert decoder.build.detail == "built by `build_small()` in zoo/factory.py:6, depth 12 → 2"
    # one action away from a pin: the same construction as the file spells it
    assert decoder.build.directive.startswith("Decoder(mixer=Mixer(dim=32, depth=2, expansion=4), vocab=100)(")
    raw = zoo.Decoder(mixer=zoo.Mixer(dim=32, depth=2, expansion=4), vocab=100)
    assert _mine(decoder, "fx") == _fx(raw)
    assert _mine(decoder, "aten") == _aten(raw, torch.randn(2, 32))
    # the child is traced as the instance the found parent builds
    assert report.find_class("Mixer").build.how == "parent"


def test_a_config_table_in_another_file_builds_the_class_with_its_config_shrunk(report, zoo):
    tower = report.find_class("Tower")
    assert tower.build.how == "found"
    assert tower.build.detail == (
        "built by `Tower(TowerSpec(width=48, n_layers=12), heads=4)` in zoo/tables.py:4, n_layers 12 → 2"
    )
    assert [spec.shape for spec in tower.build.inputs] == [["B", "T", 48]]
    raw = zoo.Tower(zoo.TowerSpec(width=48, n_layers=2), heads=4).eval()
    assert _mine(tower, "fx") == _fx(raw)
    assert tower.levels["aten"].ok

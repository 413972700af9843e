"""`nn.Lazy*` layers are given their shapes by one forward on meta tensors before the levels trace them:
with no directive (inputs guessed from the lazy layer) and with one. Each level equals raw torch on the same
module, materialised by raw torch's own first forward on the same inputs."""

from __future__ import annotations

import pytest
import torch
from fxlens_command import ROOT
from torch_reference import FREE, analyse, aten_nodes, fx_nodes, load, reported

FILE = ROOT / "tests" / "fixtures" / "lazy" / "lazy_layers.py"
CLASSES = ["LazyClassifier", "LazyProjector", "PinnedLazy"]


@pytest.fixture(scope="module")
def report():
    return analyse([FILE])[FILE.stem]


def _raw(cls) -> tuple[torch.nn.Module, tuple]:
    """The class built on meta by raw torch and run once on meta inputs of the shapes fxlens reports."""
    with torch.device("meta"):
        instance = getattr(load(FILE), cls.name)()
    args = tuple(
        torch.zeros(
            [eval(str(size), {}, dict(FREE)) for size in spec.shape], dtype=getattr(torch, spec.dtype), device="meta"
        )
        for spec in cls.build.inputs
    )
    instance(*args)
    return instance, args


def test_nothing_is_an_internal_error_and_every_class_gets_inputs(report):
    assert not [d for d in report.all_diagnostics() if d.category in ("internal", "inputs")]
    assert [c.name for c in report.classes] == CLASSES
    specs = {c.name: [(i.shape, i.dtype) for i in c.build.inputs] for c in report.classes}
    assert specs == {
        "LazyClassifier": [(["B", 3, 16, 16], "float32")],
        "LazyProjector": [(["B", 16], "float32")],
        "PinnedLazy": [([3, 12], "float32")],
    }


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("level", ["fx", "aten"])
def test_each_level_equals_raw_torch_on_the_materialised_module(report, name, level):
    cls = report.find_class(name)
    assert cls.levels[level].ok, cls.levels[level].diagnostics
    instance, args = _raw(cls)
    if level == "fx":
        expected = [(n, op, str(t), u, line, shape) for n, op, t, u, line, shape in fx_nodes(instance, args, {}, FILE)]
    else:
        expected = aten_nodes(instance, args, {}, FILE)
    assert reported(cls, level) == expected


def test_the_members_have_the_shapes_the_first_forward_gave(report):
    members = {m.name: (m.shape, m.type) for m in report.find_class("LazyClassifier").members}
    assert members["features.0.weight"] == ([16, 3, 3, 3], "Tensor")
    assert members["head.weight"] == ([10, 16], "Tensor")
    assert members["features.1.running_mean"] == ([16], "Tensor")
    modules = {m.name: m.type for m in report.find_class("PinnedLazy").members if m.kind == "module"}
    assert modules == {"fc": "Linear"}  # what LazyLinear becomes

"""The backward level against torch itself: aot_autograd's joint graph of the same module, split by
torch.compile's partitioner, saves the same values fxlens reports."""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path

import pytest
import torch
from fxlens.render.hover import hover_text
from fxlens.render.lens import level_title
from fxlens.units import bytes_text
from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch_reference import analyse_one

ROOT = Path(__file__).resolve().parents[3]
MLP = ROOT / "tests" / "fixtures" / "backward" / "mlp.py"


@pytest.fixture(scope="module")
def report():
    return analyse_one(MLP, ("fx", "aten", "backward"))


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(MLP.read_text().splitlines(), 1) if text in line)


def _fixture_module():
    spec = importlib.util.spec_from_file_location(MLP.stem, MLP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _SumLoss(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).sum()


def _torch_saved(instance, x):
    """What torch.compile's partitioner saves for backward, run directly (no fxlens code)."""
    with contextlib.ExitStack() as stack:
        joint = aot_export_joint_with_descriptors(stack, _SumLoss(instance), (x,)).graph_module
        forward, _ = min_cut_rematerialization_partition(joint, None, compiler="inductor", num_fwd_outputs=1)
    output = next(iter(forward.graph.find_nodes(op="output")))
    return sorted((n.name, list(n.meta["val"].shape)) for n in output.args[0][1:])


def test_saved_values_equal_torch_partition(report):
    result = report.find_class("MLP").levels["backward"]
    assert result.ok, result.diagnostics
    with torch.device("meta"):
        instance = _fixture_module().MLP()
    expected = _torch_saved(instance, torch.randn(4, 8, device="meta"))
    saved = sorted((n.name, n.shape) for n in result.nodes if n.saved)
    assert saved == expected
    assert all(n.phase == "forward" for n in result.nodes if n.saved)
    by_name = {n.name: n for n in result.nodes if n.saved}
    assert by_name["relu"].bytes == 4 * 16 * 4  # (4, 16) float32


def test_backward_nodes_map_to_the_line_they_differentiate(report):
    result = report.find_class("MLP").levels["backward"]
    backward = [n for n in result.nodes if n.phase == "backward"]
    assert {n.line for n in backward if n.target == "aten.threshold_backward.default"} == {_line_of("torch.relu(h)")}
    assert {n.line for n in backward if n.target == "aten.mm.default"} == {
        _line_of("self.fc1(x)"),
        _line_of("self.fc2(h)"),
    }


def test_note_says_the_loss_is_the_output_sum(report):
    result = report.find_class("MLP").levels["backward"]
    assert "backward of out.sum()" in result.note
    scalar = report.find_class("ScalarLoss").levels["backward"]
    assert scalar.ok and ".sum()" not in scalar.note


WIDE = """import torch
from torch import nn


# fxlens: Wide()(torch.randn(1024, 512))
class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(512, 512), nn.Linear(512, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
"""


def test_note_gives_the_saved_bytes_as_every_size_is_given(tmp_path):
    path = tmp_path / "wide.py"
    path.write_text(WIDE)
    result = analyse_one(path, ("backward",)).find_class("Wide").levels["backward"]
    saved = [n for n in result.nodes if n.saved]
    total = sum(n.bytes or 0 for n in saved)
    # megabytes, where the note once read "4096.0 KB" (the hover and the graph view say "4.00 MB")
    assert bytes_text(total).endswith(" MB")
    assert f"saves {len(saved)} values for backward, {bytes_text(total)} at the example size" in result.note


def test_module_without_parameters_is_a_note(report):
    result = report.find_class("NoParams").levels["backward"]
    assert not result.ok and not result.diagnostics
    assert "no parameter requires grad" in result.note


def test_lens_and_hover_show_what_is_saved(report):
    cls = report.find_class("MLP")
    result = cls.levels["backward"]
    forward = sum(1 for n in result.nodes if n.phase == "forward")
    total = sum(n.bytes for n in result.nodes if n.saved)
    title = level_title("backward", result)
    assert title == f"backward: {forward} fwd + {len(result.nodes) - forward} bwd nodes, saves {total} B"
    hover = hover_text(report, _line_of("torch.relu(h)"), 12, markdown=False)
    assert "backward: saves relu (4, 16) f32, 256 B" in hover
    assert title in hover_text(report, cls.line, 6, markdown=False)

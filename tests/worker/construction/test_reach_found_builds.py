"""Rules that decide reach on code nobody here wrote (issue #22), for a class whose build is found in its package:
a block traced as the instance a network of another file builds (and its children as that instance's), a class
sized by a builder of its own file or a classmethod preset of another, the pinned directive keeping its inputs'
memory layout. Each checked against raw torch on the same module (test_reach_rules.py: the rules for a file
alone)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from fxlens.report import FileReport
from fxlens.worker.construction import package_index, package_parents, reproduce
from torch_reference import (
    analyse_together,
    aten_nodes,
    expected,
    first_call_of,
    load,
    op_rows,
    rebuild,
    reported,
    torch_op_rows,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reach"
FX_ATEN = ("fx", "aten")
# the files the tests below trace (under FIXTURES) and the levels each asks for
TRACED = {
    "stages": ("stages/blocks.py", FX_ATEN),
    "frames": ("frames/blocks.py", FX_ATEN),
    "speech": ("speech/blocks.py", ("aten",)),
    "registered": ("registered.py", FX_ATEN),
    "presets": ("presets/model.py", ("aten",)),
}


@pytest.fixture(scope="module")
def reports() -> dict[str, FileReport]:
    """Every file's report, traced by one worker before the first test that reads one."""
    return analyse_together({name: (FIXTURES / file, levels) for name, (file, levels) in TRACED.items()})


def test_a_block_is_traced_as_the_instance_a_network_of_another_file_builds(reports, monkeypatch):
    path = FIXTURES / "stages" / "blocks.py"
    report = reports["stages"]
    monkeypatch.syspath_prepend(str(FIXTURES))
    from stages.network import SmallUNet

    # raw torch: the network at its defaults, run on the image its first layer takes
    network = SmallUNet()
    for name, where in (("Upsample", "up.upsample"), ("Merge", "up.merge")):
        cls = report.find_class(name)
        assert (cls.build.how, cls.build.detail) == (
            "found",
            f"the `{where}` instance built by SmallUNet() in stages/network.py",
        )
        args, _kwargs = first_call_of(network, where, (torch.randn(2, 3, 16, 16),), {})
        assert [spec.shape for spec in cls.build.inputs] == [["B", *a.shape[1:]] for a in args]
        # the pinned directive rebuilds it, and exports as raw torch exports it
        instance, pinned, pinned_kwargs = rebuild(path, cls.build.directive)
        assert [a.shape for a in pinned] == [a.shape for a in args]
        assert cls.levels["aten"].ok and reported(cls, "aten") == aten_nodes(instance, pinned, pinned_kwargs, path)


def test_a_child_follows_its_parent_when_the_parent_is_traced_as_a_network_in_another_file_builds_it(
    reports, monkeypatch
):
    """FrameBlock built alone (guessed channels, no inputs that run it) hands FrameMixer nothing; once
    FrameBlock is traced as VideoNet's instance, FrameMixer is that instance's mixer, with what it receives."""
    path = FIXTURES / "frames" / "blocks.py"
    report = reports["frames"]
    monkeypatch.syspath_prepend(str(FIXTURES))
    from frames.network import VideoNet

    network = VideoNet()
    block, mixer = report.find_class("FrameBlock"), report.find_class("FrameMixer")
    assert block.build.detail == "the `block` instance built by VideoNet() in frames/network.py"
    assert (mixer.build.how, mixer.build.detail) == ("parent", "the `spatial` instance built by FrameBlock")
    args, kwargs = first_call_of(network, "block.spatial", (torch.randn(2, 3, 16, 16, 16),), {})
    assert mixer.build.inputs_source == "parent"
    assert [spec.shape for spec in mixer.build.inputs] == [list(args[0].shape)]  # frames folded into the batch
    assert mixer.levels["aten"].ok
    assert reported(mixer, "aten") == aten_nodes(network.block.spatial, args, kwargs, path)


def test_the_pinned_directive_gives_a_block_its_inputs_memory_layout(reports, monkeypatch):
    """The encoder hands its block a transposed view; the block's `.contiguous()` copies it, and torch
    records that copy only for a tensor that is not already dense, so the pin must keep the layout."""
    path = FIXTURES / "speech" / "blocks.py"
    cls = reports["speech"].find_class("ConvModule")
    monkeypatch.syspath_prepend(str(FIXTURES))
    from speech.network import Encoder

    args, _ = first_call_of(Encoder(), "conv", (torch.randn(2, 8, 16),), {})
    instance, pinned, pinned_kwargs = rebuild(path, cls.build.directive)
    assert [(a.shape, a.stride()) for a in pinned] == [(a.shape, a.stride()) for a in args]
    nodes = reported(cls, "aten")
    assert cls.levels["aten"].ok and nodes == aten_nodes(instance, pinned, pinned_kwargs, path)
    assert "aten.contiguous.default" in [target for _, _, target, *_ in nodes]


@pytest.mark.parametrize(
    "value",
    [
        torch.empty(2, 16, 4, 4, device="meta").to(memory_format=torch.channels_last),
        torch.empty(3, 4, 5).transpose(0, 2),
        torch.zeros(4, 3, dtype=torch.int64).t(),
        torch.empty(2, 1, 8, 4).permute(0, 3, 1, 2),  # a size-1 dim among the permuted ones
    ],
)
def test_a_written_input_keeps_the_layout_of_a_permuted_dense_tensor(value):
    written = eval(reproduce.expression(value), {"torch": torch})
    assert (written.shape, written.stride(), written.dtype) == (value.shape, value.stride(), value.dtype)


def test_a_view_into_a_bigger_tensor_is_written_dense():
    assert reproduce.expression(torch.empty(6, 4)[:, :2]) == "torch.randn(6, 2)"


def test_a_class_sized_only_by_a_builder_of_its_own_file_is_built_by_it(reports):
    path = FIXTURES / "registered.py"
    report = reports["registered"]
    cls = report.find_class("TokenClassifier")
    assert (cls.build.how, cls.build.detail) == (
        "call-in-file",
        "built by `classifier_small()` (line 29), depth 12 → 2",
    )
    assert cls.build.directive.startswith("TokenClassifier(vocab=100, dim=32, depth=2, heads=4)(")
    raw = load(path).TokenClassifier(vocab=100, dim=32, depth=2, heads=4)
    assert op_rows(cls.levels["fx"].nodes) == torch_op_rows(torch.fx.symbolic_trace(raw).graph)
    for level in ("fx", "aten"):
        assert reported(cls, level) == expected(path, report, cls, level)


def test_reading_a_big_package_leaves_the_networks_their_whole_time_to_build(monkeypatch):
    # a package of hundreds of files takes seconds to read (diffusers: 10 s); the clock jumps past the
    # search's whole time while it is read, and the network that builds the block is still built and run
    clock = SimpleNamespace(now=0.0)
    read = package_index._read

    def slow_read(folder, own):
        found = read(folder, own)
        clock.now += 2 * package_parents.MAX_SECONDS
        return found

    monkeypatch.setattr(package_index, "_read", slow_read)
    monkeypatch.setattr(package_parents, "time", SimpleNamespace(monotonic=lambda: clock.now))
    monkeypatch.syspath_prepend(str(FIXTURES))
    from speech.blocks import ConvModule

    adopted = package_parents.adopt(
        package_index.Index(), {"ConvModule": ConvModule}, str(FIXTURES / "speech" / "blocks.py"), [str(FIXTURES)]
    )
    assert adopted["ConvModule"].build.detail.startswith("the `conv` instance built by Encoder()")


def test_a_class_sized_only_by_a_classmethod_preset_of_another_file_is_built_by_it_not_guessed(reports):
    """`ModelArgs` has no defaults, so a config of guessed values would build Decoder; the package's own
    `load()` (through `Decoder.from_name("base")`) says how, and wins, its 12 layers shrunk to 2."""
    path = FIXTURES / "presets" / "model.py"
    cls = reports["presets"].find_class("Decoder")
    assert (cls.build.how, cls.build.detail) == ("found", "built by `load()` in presets/generate.py:8, n_layer 12 → 2")
    assert (
        cls.build.directive == "Decoder(ModelArgs(dim=96, n_layer=2, n_head=6, vocab_size=320))"
        "(torch.zeros(2, 8, dtype=torch.int64))"
    )
    module = load(path)
    with torch.device("meta"):
        preset = module.Decoder(module.ModelArgs(**{**module.PRESETS["base"], "n_layer": 2}))
    ids = torch.zeros(2, 8, dtype=torch.int64)
    assert cls.levels["aten"].ok and reported(cls, "aten") == aten_nodes(preset, (ids,), {}, path)

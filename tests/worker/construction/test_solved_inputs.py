"""Input sizes solved from the model's own checks (worker/construction/solve_shapes.py): a classifier head
after fixed pooling, a `view` of a fixed size, a positional table, an `assert` on the channels. Each class
gets the sizes its layers pin, and its graphs equal raw torch's on inputs of those sizes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from fxlens.worker.construction import solve_shapes
from fxlens.worker.construction.guess_inputs import Guess
from torch_reference import analyse, expected, load, reported

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "solved"
IMAGES = FIXTURES / "small_images.py"
SHOWN = FIXTURES / "shown_sizes.py"
CELLS = FIXTURES / "masked_cells.py"


@pytest.fixture(scope="module")
def reports():
    return analyse([IMAGES, SHOWN, CELLS], levels=("fx", "aten"))


@pytest.fixture(scope="module")
def images(reports):
    return reports["small_images"]


@pytest.fixture(scope="module")
def module():
    return load(IMAGES)


@pytest.fixture(scope="module")
def cells():
    return load(CELLS)


def _call(instance, made):
    return instance(*made)


# the input each class's own layers allow: (class, its input's shape, B free)
SOLVED = [
    ("CifarResNet", ["B", 3, 32, 32]),  # Linear(512) after three halvings and a fixed 4x4 pooling
    ("LeNet", ["B", 3, 32, 32]),  # Linear(16 * 5 * 5) after two 5x5 convolutions and two poolings
    ("ConvEncoder", ["B", 3, 64, 64]),  # four stride-2 convolutions, then Linear(256 * 16)
    ("PatchTokenizer", ["B", 256]),  # `x.view(B, 16, 16)`
    ("TinyViT", ["B", 3, 32, 32]),  # a positional table for 8x8 patches and a class token
]


@pytest.mark.parametrize(("name", "shape"), SOLVED)
def test_sizes_the_layers_pin_are_solved_and_both_graphs_equal_raw_torchs(images, name, shape):
    cls = images.find_class(name)
    [spec] = cls.build.inputs
    assert (spec.shape, spec.dtype) == (shape, "float32")
    assert spec.source.endswith("solved from forward's own checks"), spec.source
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
        assert reported(cls, level) == expected(IMAGES, images, cls, level), level


def test_the_solved_sizes_are_the_only_small_ones_raw_torch_accepts(module):
    """The guessed 16x16 picture fails in torch itself, the solved 32x32 one runs, and 28x28 (a size no
    check allows) fails: the solution is the model's, not a side tried until one ran."""
    with torch.device("meta"):
        net = module.LeNet()
    for side, runs in ((16, False), (28, False), (32, True)):
        try:
            net(torch.empty(2, 3, side, side, device="meta"))
        except RuntimeError:
            assert not runs, side
        else:
            assert runs, side


def test_an_assert_on_the_channels_is_assumed_and_solved(module):
    with torch.device("meta"):
        gate = module.ChannelGate(channels=6)
    solved = solve_shapes.solve(gate, [Guess((2, 3, 16, 16), dims={0: "B"})], _call)
    assert solved is not None
    [value] = solved.values
    assert value.shape == (2, 6, 16, 16) and value.dims == {0: "B"}
    gate(torch.empty(value.shape, device="meta"))  # torch agrees


def test_a_size_the_model_pins_loses_its_free_name(module):
    """A sequence length fixed by a positional table is no free `T` any more (export would reject it as
    dynamic); the batch stays free."""
    with torch.device("meta"):
        vit = module.TinyViT()
    tokens = Guess((2, 8, 48), dims={0: "B", 1: "T"})

    def blocks_then_head(instance, made):  # the transformer part alone: tokens plus positions
        (x,) = made
        return instance.head(instance.blocks(x + instance.pos_embedding)[:, 0])

    solved = solve_shapes.solve(vit, [tokens], blocks_then_head)
    assert solved is not None
    [value] = solved.values
    assert value.shape == (2, 65, 48) and value.dims == {0: "B"}


def test_sizes_that_already_run_and_checks_nothing_satisfies_give_no_solution(module):
    with torch.device("meta"):
        net = module.LeNet()
    assert solve_shapes.solve(net, [Guess((2, 3, 32, 32), dims={0: "B"})], _call) is None
    # three channels are required by the first convolution: a one-channel guess of rank 2 cannot be fixed
    assert solve_shapes.solve(net, [Guess((2, 5), dims={0: "B"})], _call) is None


# sizes the file's own code hands to a class that takes any size: (class, input shape, dtype, where it is read)
SHOWN_SIZES = [
    # the docstring's example (`torch.randn(1, 1, 48, 48)`) before the `__main__` block's 96x96; a batch of 1 is B
    ("TinyUNet", ["B", 1, 48, 48], "float32", "as its docstring calls it: `torch.randn(1, 1, 48, 48)`"),
    # a `test()` function's `torch.randint(0, 100, (4, 12))`, handed to the instance through a name
    (
        "TokenClassifier",
        [4, 12],
        "int64",
        "as the file's code calls it: `torch.randint(0, 100, (4, 12))` (line 61)",
    ),
]


@pytest.mark.parametrize(("name", "shape", "dtype", "source"), SHOWN_SIZES)
def test_sizes_the_files_code_shows_come_first_and_both_graphs_equal_raw_torchs(reports, name, shape, dtype, source):
    cls = reports["shown_sizes"].find_class(name)
    [spec] = cls.build.inputs
    assert (spec.shape, spec.dtype, spec.source) == (shape, dtype, source)
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
        assert reported(cls, level) == expected(SHOWN, reports["shown_sizes"], cls, level), level


def test_an_operator_that_needs_numbers_gets_the_sizes_the_checks_so_far_allow(cells):
    """MultiheadAttention's baddbmm (a key padding mask) cannot expand sizes that have no value yet: the run
    goes on with numbers for the sizes the checks before it constrain (channels 24, the mask's cells as
    many as the map's), and the rest as guessed."""
    with torch.device("meta"):
        attention = cells.MaskedCellAttention()
    guesses = [Guess((2, 8, 8, 24), dims={0: "B"}), Guess((2, 8, 8, 24), dims={0: "B"})]
    solved = solve_shapes.solve(attention, guesses, _call)
    assert solved is not None
    features, hidden = (value.shape for value in solved.values)
    assert features[1] == 24 and math.prod(hidden[1:]) == features[2] * features[3] and hidden[0] == features[0]
    attention(torch.empty(features, device="meta"), torch.empty(hidden, device="meta"))  # torch agrees


def test_a_mask_padded_attention_is_solved_and_exports_as_raw_torch(reports):
    cls = reports["masked_cells"].find_class("MaskedCellAttention")
    features, hidden = cls.build.inputs
    assert features.shape[1] == 24 and features.source.endswith("solved from forward's own checks")
    assert math.prod(hidden.shape[1:]) == features.shape[2] * features.shape[3]
    assert cls.levels["aten"].ok, cls.levels["aten"].diagnostics
    assert reported(cls, "aten") == expected(CELLS, reports["masked_cells"], cls, "aten")

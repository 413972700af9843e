"""Research code's classes that only a list of blocks, a factory taking `args`, or an index into a table set up by
the repository's scripts can run (issue #41 items 1, 3, 4, 5), on tests/fixtures/research with no directive.
Every graph is compared with raw torch's, built from the directive fxlens reports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import torch
import torch.fx
from torch_reference import analyse, expected, rebuild, reported

RESEARCH = Path(__file__).resolve().parents[2] / "fixtures" / "research"
BLOCKS = RESEARCH / "forecast" / "layers" / "blocks.py"
DETECTOR = RESEARCH / "setdet" / "setdet" / "detector.py"
DECODER = RESEARCH / "tinygen" / "model.py"


@pytest.fixture(scope="module")
def blocks():
    return analyse([BLOCKS], classes=["Encoder"], levels=("fx", "aten"))["blocks"]


@pytest.fixture(scope="module")
def detector():
    return analyse([DETECTOR], classes=["SetDetector"], levels=("fx",), roots=[str(RESEARCH / "setdet")])["detector"]


@pytest.fixture(scope="module")
def decoder():
    return analyse([DECODER], classes=["CachedDecoder"], levels=("aten",), roots=[str(RESEARCH / "tinygen")])["model"]


def test_a_list_handed_to_a_module_list_is_built_of_the_files_block_class(blocks):
    # `self.blocks = nn.ModuleList(blocks)`: two EncoderBlocks, each with the attention module it takes
    cls = blocks.find_class("Encoder")
    assert cls.build.how == "guessed"
    assert "EncoderBlock(attention=FullAttention(d_model=64, n_heads=4), d_model=64) for _ in range(2)" in (
        cls.build.detail
    )
    instance, _args, _kwargs = rebuild(BLOCKS, cls.build.directive)
    assert [type(block.attention).__name__ for block in instance.blocks] == ["FullAttention", "FullAttention"]
    assert cls.levels["fx"].ok, cls.levels["fx"].diagnostics
    assert cls.levels["aten"].ok, cls.levels["aten"].diagnostics
    assert reported(cls, "aten") == expected(BLOCKS, blocks, cls, "aten")


def test_a_factory_taking_args_is_called_with_the_argparse_defaults_of_the_repository(detector, monkeypatch):
    # `def build_detector(args): ... return SetDetector(backbone, position, transformer, ...)`, `args` from main.py
    cls = detector.find_class("SetDetector")
    assert cls.build.how == "call-in-file"
    assert cls.build.detail.startswith("built by `build_detector(args)` (args: backbone_widths, position_embedding")
    assert "from the argparse defaults of main.py (enc_layers 6 → 2, dec_layers 6 → 2))" in cls.build.detail
    monkeypatch.syspath_prepend(str(RESEARCH / "setdet"))  # the package imports relatively: as its scripts do
    namespace = {**vars(importlib.import_module("setdet.detector")), "torch": torch}
    built = ast.parse(cls.build.directive, mode="eval").body.func  # the directive's constructor, called on inputs
    with torch.device("meta"):
        instance = eval(compile(ast.Expression(built), str(DETECTOR), "eval"), namespace)
    assert instance.transformer.d_model == 256 and len(instance.transformer.encoder) == 2
    assert cls.levels["fx"].ok, cls.levels["fx"].diagnostics
    assert [(n.op, n.target) for n in cls.levels["fx"].nodes] == [
        (n.op, str(n.target) if n.op != "call_function" else n._pretty_print_target(n.target))
        for n in torch.fx.symbolic_trace(instance).graph.nodes
    ]


def test_an_index_into_a_table_gets_positions_and_set_up_tensors_run_as_the_parameters_do(decoder):
    # `self.rope[input_pos]`: the positions of a sequence; `self.rope` is a plain attribute `setup_caches` made
    cls = decoder.find_class("CachedDecoder")
    idx, input_pos = cls.build.inputs
    assert (input_pos.name, input_pos.shape, input_pos.dtype) == ("input_pos", ["T"], "int64")
    assert input_pos.source == "it selects rows of a table: positions"
    assert (idx.shape, idx.dtype) == (["B", "T"], "int64")
    assert cls.levels["aten"].ok, cls.levels["aten"].diagnostics
    assert reported(cls, "aten") == expected(DECODER, decoder, cls, "aten")

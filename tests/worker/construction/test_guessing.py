"""Constructors nothing in the file supplies: fxlens guesses small plausible arguments, says so, and
gives the directive that pins them; torch agrees with every graph built from that directive."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest
from fxlens.worker.construction import guess_arguments as guess
from fxlens.worker.construction import parameter_uses
from torch_reference import FIXTURES, analyse, expected, rebuild, reported

ROOT = FIXTURES.parents[2]
FILES = ["vit", "resnet", "switches"]
GUESSED = [("vit", "ViT"), ("resnet", "ResNet"), ("switches", "ConvNormAct"), ("switches", "UNet")]
# every class of those files: guessed ones and the children their guessed instance builds
TRACED = [
    *GUESSED,
    ("vit", "Transformer"),
    ("vit", "Attention"),
    ("vit", "FeedForward"),
    ("resnet", "BasicBlock"),
    ("switches", "ConvPair"),
    ("switches", "Downscale"),
    ("switches", "Upscale"),
]


@pytest.fixture(scope="module")
def reports():
    return analyse([FIXTURES / f"{name}.py" for name in FILES])


@pytest.mark.parametrize("file_key,class_name", TRACED)
@pytest.mark.parametrize("level", ["fx", "aten"])
def test_graphs_match_raw_torch_built_from_the_reported_directive(reports, file_key, class_name, level):
    report = reports[file_key]
    cls = report.find_class(class_name)
    assert cls.levels[level].ok, cls.levels[level].diagnostics
    assert reported(cls, level) == expected(FIXTURES / f"{file_key}.py", report, cls, level)


@pytest.mark.parametrize(
    "file_key,class_name,arguments",
    [
        ("vit", "ViT", "image_size=32, patch_size=8, num_classes=10, dim=64, depth=2, heads=4, mlp_dim=64"),
        ("resnet", "ResNet", "block=BasicBlock, layers=[1, 1, 1, 1]"),
        ("switches", "ConvNormAct", "in_channels=3, out_channels=16, norm='batch', activation='relu'"),
        ("switches", "UNet", "n_channels=3, n_classes=10"),
    ],
)
def test_guessed_arguments_are_labelled_listed_and_pinnable(reports, file_key, class_name, arguments):
    cls = reports[file_key].find_class(class_name)
    assert cls.build.how == "guessed" and cls.build.detail == arguments
    assert cls.build.directive.startswith(f"{class_name}({arguments})(torch.randn(2, 3, ")
    (hint,) = [d for d in cls.levels["fx"].diagnostics if d.category == "guessed"]
    assert hint.severity == "hint" and hint.line == cls.line and arguments in hint.message
    assert hint.fix == f"# fxlens: {cls.build.directive}"


def test_the_directive_rebuilds_the_same_module(reports):
    cls = reports["vit"].find_class("ViT")
    instance, args, _kwargs = rebuild(FIXTURES / "vit.py", cls.build.directive)
    assert type(instance).__name__ == "ViT" and len(instance.transformer.layers) == 2
    assert [list(a.shape) for a in args] == [[2 if s == "B" else s for s in cls.build.inputs[0].shape]]
    params = {m.name: [int(s) for s in m.shape] for m in cls.members if m.kind == "parameter"}
    assert params == {name: list(p.shape) for name, p in instance.named_parameters()}


def test_children_of_a_guessed_model_are_its_instances(reports):
    block = reports["resnet"].find_class("BasicBlock")
    assert block.built_by == "ResNet" and block.build.directive == ""
    assert [i.shape for i in block.build.inputs] == [["B", 64, 4, 4]]


def test_cli_json_carries_the_directive_and_built_guessed():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens",
            "graph",
            str(FIXTURES / "switches.py"),
            "--class",
            "UNet",
            "--level",
            "aten",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    data = json.loads(run.stdout)
    assert data["ok"] and data["inputs"]["built"] == "guessed"
    assert data["inputs"]["directive"] == "UNet(n_channels=3, n_classes=10)(torch.randn(2, 3, 16, 16))"
    text = subprocess.run(
        [sys.executable, "-m", "fxlens", "graph", str(FIXTURES / "switches.py"), "--class", "UNet", "--level", "fx"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    ).stdout
    assert text.splitlines()[0].startswith("== UNet (fx) — built: guessed")
    assert "fix: # fxlens: UNet(n_channels=3, n_classes=10)(torch.randn(2, 3, 16, 16))" in text


# -- the rules, on signatures in the style of other real constructors ----------------------------


def _options(signature: str, body: str = "pass") -> dict[str, list]:
    namespace: dict = {}
    exec(f"class C:\n    def __init__(self, {signature}):\n        {body}\n", namespace)
    import ast

    tree = ast.parse(f"class C:\n    def __init__(self, {signature}):\n        {body}\n").body[0]
    params = [p for p in inspect.signature(namespace["C"]).parameters.values() if p.default is inspect.Parameter.empty]
    siblings = {
        p.name: p.default
        for p in inspect.signature(namespace["C"]).parameters.values()
        if p.default is not inspect.Parameter.empty
    }
    uses = parameter_uses.uses_in(parameter_uses.init_of(tree), [p.name for p in params])
    return {p.name: [o.value for o in guess.options_for(p, uses[p.name], siblings, [])] for p in params}


@pytest.mark.parametrize(
    "signature,body,first",
    [
        ("n_embd, n_head, n_layer, vocab_size", "pass", {"n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100}),
        (
            "d_model, nhead, dim_feedforward, dropout",
            "pass",
            {"d_model": 64, "nhead": 4, "dim_feedforward": 64, "dropout": 0.0},
        ),
        (
            "hidden_size, num_attention_heads, head_dim",
            "pass",
            {"hidden_size": 64, "num_attention_heads": 4, "head_dim": 16},
        ),
        (
            "in_chans, img_size, patch_size, num_classes",
            "pass",
            {"in_chans": 3, "img_size": 32, "patch_size": 8, "num_classes": 10},
        ),
        ("depths: list, embed_dim: int", "pass", {"depths": [1, 1, 1, 1], "embed_dim": 64}),
        (
            "mode",
            "self.up = nn.Upsample(scale_factor=2) if mode in ('nearest', 'bilinear') else None",
            {"mode": "nearest"},
        ),
        ("use_bias: bool, block_size", "pass", {"use_bias": False, "block_size": 16}),
        ("in_dim, out_dim=128", "pass", {"in_dim": 128}),
    ],
)
def test_first_guesses_follow_names_annotations_uses_and_siblings(signature, body, first):
    assert {name: values[0] for name, values in _options(signature, body).items()} == first


def test_a_parameter_nothing_hints_at_is_not_guessed():
    assert _options("thing") == {"thing": []}


def test_widths_are_made_divisible_by_the_heads():
    combo = {"dim": guess.Option(64, "64")}
    guess._fit_heads(combo, {"dim": "dim"}, {"heads": 12})
    assert combo["dim"].value % 12 == 0 and combo["dim"].text == str(combo["dim"].value)

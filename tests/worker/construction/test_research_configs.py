"""Research code's other ways to say how a model is built (issue #41): a settings dataclass of the
repository, a YAML file under configs/, and the set-up calls its scripts make between building a model
and calling it. Every graph is compared with raw torch's, built from the directive fxlens reports."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import json
from pathlib import Path

import pytest
import torch
import yaml
from fxlens.worker.construction import attribute_bags, config_files, script_defaults, setup_calls
from torch_reference import analyse, expected, rebuild, reported

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
RESEARCH = Path(__file__).resolve().parents[2] / "fixtures" / "research"
VISION = CONFIGS / "vision"
SAMPLER = CONFIGS / "sampler"


@pytest.fixture(scope="module")
def vision():
    return analyse([VISION / "nets.py"], levels=("fx", "aten"))["nets"]


@pytest.fixture(scope="module")
def sampler():
    return analyse([SAMPLER / "decoder.py"], levels=("fx", "aten"))["decoder"]


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_settings_class_is_read_with_the_defaults_python_gives_it():
    (name, fields), *_ = script_defaults.settings_classes(ast.parse((VISION / "settings.py").read_text()))
    made = getattr(_module(VISION / "settings.py"), name)()
    assert fields == {f.name: getattr(made, f.name) for f in dataclasses.fields(made)}


def test_config_files_are_read_as_yaml_and_json_read_them():
    assert config_files.read_yaml((VISION / "configs" / "mixer_small.yaml").read_text()) == yaml.safe_load(
        (VISION / "configs" / "mixer_small.yaml").read_text()
    )
    files = {Path(f.path).name: f.defaults for f in config_files.config_files(str(VISION))}
    assert files["sweep.json"] == json.loads((VISION / "configs" / "sweep.json").read_text())
    # the leaves of every section, outer sections first: what a model reads from the section it is handed
    assert list(files["mixer_small.yaml"])[:3] == ["dim", "patch_size", "image"]
    with pytest.raises(ValueError):
        config_files.read_yaml("description: |\n  a block of text\n")


def test_a_bag_is_filled_from_the_repositorys_dataclass_and_the_rest_inferred(vision):
    cls = vision.find_class("PatchNet")
    assert cls.build.detail == (
        "cfg: pool inferred from its use; image_size, patch, width, heads, depth, classes from the defaults "
        "of ExperimentConfig (settings.py) (depth 12 → 2)"
    )
    instance, _args, _kwargs = rebuild(VISION / "nets.py", cls.build.directive)
    assert instance.pool == "cls" and len(instance.encoder.layers) == 2 and instance.head.out_features == 100
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, cls.levels[level].diagnostics
        assert reported(cls, level) == expected(VISION / "nets.py", vision, cls, level)


def test_a_dict_bag_is_filled_from_a_yaml_file_of_the_repository(vision):
    cls = vision.find_class("TokenMixer")
    assert cls.build.detail == (
        "hparams: dim, patch_size, image, num_blocks, token_hidden (and 4 more) from configs/mixer_small.yaml; "
        "num_classes inferred from its use (num_blocks 8 → 2)"
    )  # a dict is passed whole (`**hparams` hands on every key): the directive spells all of it
    instance, _args, _kwargs = rebuild(VISION / "nets.py", cls.build.directive)
    assert cls.build.directive.startswith("TokenMixer(hparams={'dim': 128, ") and "'epochs': 300" in cls.build.directive
    assert len(instance.token_mlps) == 2 and instance.head.out_features == 10
    assert reported(cls, "fx") == expected(VISION / "nets.py", vision, cls, "fx")


def test_the_set_up_calls_of_the_generate_script_are_replayed(sampler):
    cls = sampler.find_class("Decoder")
    assert cls.build.detail == (
        "Decoder(args=DecoderArgs()); set up as generate.py:17 does: "
        "setup_caches(max_batch_size=1, max_seq_length=16), eval() (max_seq_length=16 guessed)"
    )
    # without them, the forward fails for torch too
    with torch.device("meta"):
        bare = _module(SAMPLER / "decoder.py").Decoder(_module(SAMPLER / "decoder.py").DecoderArgs())
    with pytest.raises(AssertionError, match="Caches must be initialized first"):
        bare(torch.zeros(2, 8, dtype=torch.long, device="meta"))
    instance, _args, _kwargs = rebuild(SAMPLER / "decoder.py", cls.build.directive)
    assert not instance.training and instance.causal.shape == (16, 16)
    assert cls.levels["aten"].ok and reported(cls, "aten") == expected(SAMPLER / "decoder.py", sampler, cls, "aten")


def test_a_set_up_call_that_fails_here_leaves_the_build_as_it_was(sampler):
    cls = sampler.find_class("Scorer")
    # `init_weights("runs/scorer.pt")` loads a checkpoint that is not there: the class is built without it
    assert cls.build.how == "no-arguments" and cls.build.directive == "Scorer()(torch.zeros(2, 8, dtype=torch.int64))"
    assert cls.levels["aten"].ok


def test_the_reported_directive_pins_the_set_up(sampler, tmp_path):
    cls = sampler.find_class("Decoder")
    pinned = tmp_path / "decoder.py"
    text = (SAMPLER / "decoder.py").read_text()
    pinned.write_text(text.replace("class Decoder(", f"# fxlens: {cls.build.directive}\nclass Decoder(", 1))
    report = analyse([pinned], classes=["Decoder"], levels=("aten",))["decoder"]
    again = report.find_class("Decoder")
    assert again.build.how == "directive" and again.levels["aten"].ok
    assert len(again.levels["aten"].nodes) == len(cls.levels["aten"].nodes)
    assert reported(again, "aten") == expected(pinned, report, again, "aten")


def test_set_up_calls_are_followed_into_the_function_the_model_is_handed_to(monkeypatch):
    # tinygen's script builds the decoder, loads a checkpoint, and hands it to `generate(model, ...)`,
    # which sets up its caches before the first call
    monkeypatch.syspath_prepend(str(RESEARCH / "tinygen"))
    decoder = _module(RESEARCH / "tinygen" / "model.py").CachedDecoder
    found = setup_calls.find(decoder, str(RESEARCH / "tinygen"))
    assert found.calls == [("setup_caches", (), {"max_batch_size": 1, "max_seq_length": 16})]
    assert found.where == "generate.py:40" and found.guessed == ["max_seq_length=16"]


def test_a_module_parameter_read_like_settings_is_not_made_a_bag():
    # `backbone.num_channels` reads an attribute, but the class keeps and calls `self.backbone`: a module
    tree = ast.parse((RESEARCH / "setdet" / "setdet" / "detector.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SetDetector")
    init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    params = [inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in init.args.args[1:]]
    assert attribute_bags.bag_reads(tree, node, params) == {}

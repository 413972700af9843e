"""Constructor values a research repository's code asks for (issue #41): values that meet the module's
own checks, solved from the errors it raises, and settings bags (`configs.d_model`) built from the
defaults the repository's training script declares. Every graph is compared with raw torch's, built
from the directive fxlens reports."""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import pytest
import torch
from fxlens.worker.construction import constraints, script_defaults
from torch_reference import analyse, expected, rebuild, reported

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
BLOCKS = CONFIGS / "denoiser_blocks.py"
STAGES = CONFIGS / "stages.py"
FORECAST = CONFIGS / "forecast"


@pytest.fixture(scope="module")
def reports():
    return analyse([BLOCKS, STAGES], levels=("fx", "aten"))


@pytest.fixture(scope="module")
def blocks(reports):
    return reports["denoiser_blocks"]


@pytest.fixture(scope="module")
def forecast():
    files = [FORECAST / "models" / "patch_mixer.py", FORECAST / "models" / "trend_split.py"]
    return analyse(files, levels=("fx",))


@pytest.fixture
def on_forecast_path(monkeypatch):
    """Raw torch imports the repository's files as its script does: from the repository's folder."""
    monkeypatch.syspath_prepend(str(FORECAST))
    yield
    for name in [n for n in sys.modules if n == "layers" or n.startswith("layers.")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    "class_name,arguments",
    [
        # GroupNorm(32, c) of both widths: 3 and 16 grow to 32
        ("ResidualStage", "in_channels=32, out_channels=32"),
        # a Conv2d of groups=8: the 3 channels grow to 8
        ("SeparableMixer", "channels=8, expansion=4"),
        # `assert channels % head_width == 0` grows the 3 channels to 4, then GroupNorm(8, channels) to 8
        ("MapAttention", "channels=8, head_width=4"),
        # `if pos_dim != hidden_size // num_heads: raise ValueError(...)`
        ("HeadPositions", "hidden_size=64, num_heads=4, pos_dim=16, max_len=16"),
        # `if dim != channels: raise ...`: the width takes the channels' value
        ("GatedSkip", "dim=3, channels=3"),
        # classes for `norm_layer` and `act_layer` from torch.nn: over channels where the class convolves
        ("PatchStem", "in_chans=3, embed_dim=64, norm_layer=torch.nn.BatchNorm2d, act_layer=torch.nn.GELU"),
        ("TokenMlp", "dim=64, hidden_dim=64, norm_layer=torch.nn.LayerNorm, act_layer=torch.nn.GELU"),
    ],
)
def test_values_meet_the_checks_the_constructor_raises(blocks, class_name, arguments):
    cls = blocks.find_class(class_name)
    assert cls.build.how == "guessed" and cls.build.detail == arguments
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, cls.levels[level].diagnostics
        assert reported(cls, level) == expected(BLOCKS, blocks, cls, level)


def _raised(make):
    try:
        make()
    except Exception as error:  # noqa: BLE001 - the error under test
        return error
    raise AssertionError("expected the constructor to raise")


def test_a_torch_check_becomes_a_constraint_on_the_value_that_broke_it():
    group_norm = constraints.from_error(_raised(lambda: torch.nn.GroupNorm(32, 3)))
    assert (group_norm.kind, group_norm.value, group_norm.wanted) == ("multiple", 3, 32)
    assert constraints.satisfied(
        group_norm, {"in_channels": 3, "out_channels": 16}, {"in_channels": "channels", "out_channels": "channels"}
    ) == {"in_channels": 32}
    conv = constraints.from_error(_raised(lambda: torch.nn.Conv2d(12, 16, 3, groups=8)))
    assert (conv.kind, conv.value, conv.wanted, conv.divisor) == ("multiple", 12, 8, "groups")
    # the width does not belong to fxlens's guess (a constant of the file): the count of groups gives way
    assert constraints.satisfied(conv, {"groups": 8}, {"groups": "groups"}) == {"groups": 4}


def test_a_users_check_becomes_a_constraint_read_from_its_source():
    module = {}
    exec(compile(BLOCKS.read_text(), str(BLOCKS), "exec"), module)
    error = _raised(lambda: module["HeadPositions"](64, 4, 8, 16))
    assert str(error) == "expected positional dim 16, got 8"
    check = constraints.from_error(error)
    assert (check.kind, check.name, check.value, check.wanted) == ("equal", "pos_dim", 8, 16)
    assert constraints.from_error(ValueError("nothing raised this")) is None


def test_argparse_defaults_are_read_without_running_the_script():
    declared = script_defaults.declared(ast.parse((FORECAST / "run.py").read_text()))
    assert list(declared)[:4] == ["model", "task", "seed", "root_path"]  # the order the script declares them
    assert declared["d_model"] == 128 and declared["dropout"] == 0.1  # "128" through type=int, as argparse does
    assert declared["revin"] is False and declared["activation"] == "gelu"
    assert "device" not in declared  # an expression: never evaluated
    # what argparse itself makes of the same declarations, for every default read
    parser = argparse.ArgumentParser()
    parser.add_argument("--d_model", type=int, default="128")
    parser.add_argument("--revin", action="store_true")
    assert vars(parser.parse_args([])) == {"d_model": declared["d_model"], "revin": declared["revin"]}


def test_a_configs_bag_is_built_from_the_training_scripts_defaults(forecast, on_forecast_path):
    path = FORECAST / "models" / "patch_mixer.py"
    cls = forecast["patch_mixer"].find_class("Model")
    assert cls.build.how == "guessed"
    assert cls.build.detail == (
        "configs: task, patch_len, stride, revin, lookback, d_model, e_layers, n_heads, d_ff, dropout, activation, "
        "horizon from the argparse defaults of run.py (e_layers 3 → 2)"
    )
    instance, _args, _kwargs = rebuild(path, cls.build.directive)
    assert len(instance.blocks) == 2 and instance.embed.out_features == 128
    assert instance.blocks[0].attention.num_heads == 8
    assert cls.levels["fx"].ok and reported(cls, "fx") == expected(path, forecast["patch_mixer"], cls, "fx")


def test_a_setting_no_script_declares_is_inferred_from_its_use_and_labelled(forecast, on_forecast_path):
    path = FORECAST / "models" / "trend_split.py"
    cls = forecast["trend_split"].find_class("Model")
    assert cls.build.detail == (
        "args: kernel_avg, lookback, horizon from the argparse defaults of run.py; mix_channels inferred from its use"
    )  # `n_vars` only sizes the channel mix the switch leaves out: never read, never listed
    assert "mix_channels=False" in cls.build.directive  # `if args.mix_channels`: the switch off
    instance, _args, _kwargs = rebuild(path, cls.build.directive)
    assert isinstance(instance.channel_mix, torch.nn.Identity) and instance.seasonal.in_features == 96
    assert reported(cls, "fx") == expected(path, forecast["trend_split"], cls, "fx")


def test_a_module_parameter_nothing_else_hints_at_gets_the_files_class_of_its_name(reports):
    stages = reports["stages"]
    cls = stages.find_class("AttentionStage")
    assert cls.build.how == "guessed" and cls.build.detail == "attention=WindowAttention(dim=64, num_heads=4)"
    attention = stages.find_class("WindowAttention")
    assert attention.built_by == "AttentionStage"  # traced as the instance the stage holds
    for level in ("fx", "aten"):
        assert reported(cls, level) == expected(STAGES, stages, cls, level)
        assert reported(attention, level) == expected(STAGES, stages, attention, level)

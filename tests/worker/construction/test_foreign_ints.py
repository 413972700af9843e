"""Sizes that are not Python ints: numpy integers read off a gymnasium environment or made by numpy
arithmetic become a layer's `in_features` or `in_channels`, which torch accepts. fxlens's guesses read
those sizes back; they used to end the whole file as `TypeError: an integer is required [internal]`."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_reference import analyse, expected, reported

FILE = Path(__file__).resolve().parents[2] / "fixtures" / "foreign_ints" / "vector_env_agent.py"


@pytest.fixture(scope="module")
def report():
    return analyse([FILE])[FILE.stem]


def test_nothing_in_the_file_is_an_internal_error(report):
    assert not [d for d in report.all_diagnostics() if d.category == "internal"]
    assert [c.name for c in report.classes] == ["Agent", "Encoder"]


@pytest.mark.parametrize("level", ["fx", "aten"])
def test_an_agent_built_from_a_vector_env_traces_like_raw_torch(report, level):
    agent = report.find_class("Agent")
    assert agent.build.how == "directive"
    assert [(i.name, i.shape, i.dtype) for i in agent.build.inputs] == [("x", ["B", 4], "float32")]
    assert agent.levels[level].ok
    assert reported(agent, level) == expected(FILE, report, agent, level)


@pytest.mark.parametrize("level", ["fx", "aten"])
def test_a_numpy_channel_count_is_guessed_like_an_int(report, level):
    encoder = report.find_class("Encoder")
    assert [(i.name, i.shape[:2], i.dtype) for i in encoder.build.inputs] == [("frames", ["B", 3], "float32")]
    assert encoder.levels[level].ok
    assert reported(encoder, level) == expected(FILE, report, encoder, level)

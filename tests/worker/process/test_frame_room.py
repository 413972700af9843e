"""with_room (worker/process/frame_room.py): the trace child's call of the analysis, from a frame that reserves
room on CPython's frame stack, must behave as the plain call: the same value, the same exception, and the
user's recursion reaching one frame less deep (the one frame it adds), not less."""

from __future__ import annotations

import pytest
from fxlens.worker.process.frame_room import with_room


def test_the_step_s_value_and_arguments_pass_through():
    assert with_room(lambda a, b, *rest: (a, b, rest), 1, "two", 3.0) == (1, "two", (3.0,))


def test_the_step_s_exception_is_raised_as_it_is():
    error = ValueError("from user code")

    def step():
        raise error

    with pytest.raises(ValueError) as raised:
        with_room(step)
    assert raised.value is error


def _deepest() -> int:
    depth = 0

    def down():
        nonlocal depth
        depth += 1
        down()

    try:
        down()
    except RecursionError:
        pass
    return depth


def test_user_recursion_reaches_as_deep_as_without_it_but_for_its_one_frame():
    assert with_room(_deepest) == _deepest() - 1

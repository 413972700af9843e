"""Which constructor argument a failure comes from: the line of the class's own `__init__` the exception
passed through, and the parameters whose values reach it through local assignments and attributes."""

from __future__ import annotations

import ast
import textwrap

from fxlens.worker.construction.blame import blame, blamed_text, passed

SOURCE = textwrap.dedent(
    """
    class Stage:
        def __init__(self, width, groups, depth=2, act="relu"):
            hidden = width * 4
            self.groups = groups
            self.blocks = [self.check(i) for i in range(depth)]
            if act:
                self.norm = self.check_groups(hidden, self.groups)

        def check(self, i):
            return i

        def check_groups(self, channels, groups):
            if channels % groups:
                raise ValueError(f"num_channels ({channels}) must be divisible by num_groups ({groups})")
    """
)
PATH = "<stage>"


def _raised(*args, **kwargs) -> BaseException:
    namespace: dict = {}
    exec(compile(SOURCE, PATH, "exec"), namespace)
    try:
        namespace["Stage"](*args, **kwargs)
    except Exception as error:  # noqa: BLE001  the failure under test
        return error
    raise AssertionError("Stage built")


CLASS = next(n for n in ast.parse(SOURCE).body if isinstance(n, ast.ClassDef))


def test_the_failing_line_blames_the_parameters_its_values_come_from():
    found = blame(_raised(3, 32), PATH, CLASS)
    assert found is not None and found.line == 8  # inside `if act:`: the statement, not the block
    assert found.parameters == ["width", "groups"]  # through `hidden = width * 4` and `self.groups = groups`


def test_the_arguments_a_call_passed_are_named_as_written():
    call = ast.parse("Stage(3, groups=32)", mode="eval").body
    assert passed(call, CLASS) == {"width": "3", "groups": "32"}
    assert blamed_text(_raised(3, groups=32), PATH, CLASS, call) == (8, ["`width=3`", "`groups=32`"])


def test_a_failure_outside_the_class_blames_nothing():
    error = ValueError("raised elsewhere")
    assert blame(error, PATH, CLASS) is None
    other = _raised(3, 32)
    assert blame(other, "<another file>", CLASS) is None
    missing = NameError("name 'SCALE' is not defined")
    missing.__traceback__ = other.__traceback__
    assert blame(missing, PATH, CLASS) is None  # a name the code lacks is no argument's fault

"""Constructor values that must satisfy the module's own checks, solved from the error it raises.

A guessed constructor that raises says what it wants: torch's `num_channels (3) must be divisible by
num_groups (32)`, `in_channels must be divisible by groups`, `embed_dim must be divisible by num_heads`,
or the user's `assert dim % heads == 0` and `if pos_dim != hidden // heads: raise ValueError("expected
positional dim 16")`. The frame that raised holds the values that broke the check, and its source holds
the check itself. Each error becomes a constraint on one value (a multiple of, or equal to, a number), the
guessed argument that had that value (by name, else by value) changes to satisfy it, and the constructor
runs again, a few times at most: each run may reveal the next check.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import textwrap
import types
from dataclasses import dataclass
from typing import Any

# the checks of one constructor solved one after the other, at most
MAX_REPAIRS = 4
# the expressions of a check evaluated in the frame that raised it: arithmetic on names, nothing that calls
_EVALUATED = (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator, ast.unaryop)
_DIVISIBLE = re.compile(r"(\w+)(?: \(\d+\))? (?:must|should|has to) be (?:divisible|a multiple) (?:by|of) (\w+)")


@dataclass
class Constraint:
    """`name` (the name the check gives it, "" for an expression) holds `value` and must become a multiple
    of `step` (kind "multiple") or equal `wanted` (kind "equal"); for a multiple, `divisor` names the
    step's own name, which may change instead."""

    kind: str
    name: str
    value: int
    wanted: int
    divisor: str = ""


def from_error(error: BaseException) -> Constraint | None:
    """The check `error` says the constructor failed, as a constraint, or None (no check fxlens reads)."""
    frame, line = _raising_frame(error)
    if frame is None:
        return None
    names = {**frame.f_globals, **frame.f_locals}
    said = _DIVISIBLE.search(str(error))
    if said is not None:
        value, step = _value(said.group(1), names), _value(said.group(2), names)
        if _is_int(value) and _is_int(step) and step > 0:
            return Constraint("multiple", said.group(1), value, step, said.group(2))
    check = _check_at(frame, line)
    return _constraint(check, names) if check is not None else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _value(name: str, names: dict) -> Any:
    """A name of the frame, or the attribute `self.name` of the instance being built."""
    if name in names:
        return names[name]
    owner = names.get("self")
    return getattr(owner, name, None) if owner is not None else None


def _raising_frame(error: BaseException) -> tuple[types.FrameType | None, int]:
    tb = error.__traceback__
    if tb is None:
        return None, 0
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame, tb.tb_lineno


def _check_at(frame: types.FrameType, line: int) -> ast.expr | None:
    """The condition that must hold for the statement at `line` not to raise: an assert's test, or the
    negated test of the `if` whose body raises."""
    try:
        lines, first = inspect.getsourcelines(frame.f_code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    offset = first - 1 if first else 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno + offset == line:
            return node.test
        if isinstance(node, ast.If) and any(
            isinstance(stmt, ast.Raise) and stmt.lineno + offset == line for stmt in node.body
        ):
            return ast.UnaryOp(ast.Not(), node.test)
    return None


def _evaluated(node: ast.expr, names: dict) -> Any:
    if not all(isinstance(n, _EVALUATED) for n in ast.walk(node)):
        return None
    try:
        return eval(compile(ast.Expression(ast.fix_missing_locations(node)), "<check>", "eval"), {}, dict(names))
    except Exception:  # noqa: BLE001 - a check fxlens cannot evaluate gives no constraint
        return None


def _named(node: ast.expr) -> str:
    """`heads` of `heads` or `self.heads`; "" for an expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return ""


def _constraint(check: ast.expr, names: dict) -> Constraint | None:
    """What `check` (a condition that must hold) asks of one value: `a % b == 0`, `not a % b`,
    `not (a % b != 0)`, `a == b`, `not (a != b)`."""
    negated = False
    while isinstance(check, ast.UnaryOp) and isinstance(check.op, ast.Not):
        negated, check = not negated, check.operand
    if isinstance(check, ast.BinOp) and isinstance(check.op, ast.Mod) and negated:  # `not a % b`
        return _multiple(check, names)
    if not (isinstance(check, ast.Compare) and len(check.ops) == 1):
        return None
    op, left, right = check.ops[0], check.left, check.comparators[0]
    equal = isinstance(op, ast.Eq) != negated and isinstance(op, (ast.Eq, ast.NotEq))
    if not equal:
        return None
    for side, other in ((left, right), (right, left)):
        if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod) and _evaluated(other, names) == 0:
            return _multiple(side, names)
    wanted_left, wanted_right = _evaluated(right, names), _evaluated(left, names)
    # the side that is a plain name changes to what the other side computes (`pos_dim == hidden // heads`)
    for side, wanted in ((left, wanted_left), (right, wanted_right)):
        value = _evaluated(side, names)
        if _named(side) and _is_int(value) and _is_int(wanted) and wanted > 0:
            return Constraint("equal", _named(side), value, wanted)
    return None


def _multiple(mod: ast.BinOp, names: dict) -> Constraint | None:
    value, step = _evaluated(mod.left, names), _evaluated(mod.right, names)
    if _is_int(value) and _is_int(step) and step > 0:
        return Constraint("multiple", _named(mod.left), value, step, _named(mod.right))
    return None


def satisfied(constraint: Constraint, values: dict[str, Any], changeable: dict[str, str | None]) -> dict[str, int]:
    """The values (of `values`, the arguments tried) that change to satisfy `constraint`: {} when none
    can. `changeable` maps each argument fxlens chose to its kind (name_kinds.kind_of): a width
    or a channel count changes to a multiple, a count of groups or heads to a divisor."""

    def holding(name: str, value: int, kinds: tuple[str | None, ...]) -> list[str]:
        ints = {n: v for n, v in values.items() if n in changeable and _is_int(v)}
        if name in ints and ints[name] == value:
            return [name]
        return [n for n, v in ints.items() if v == value and changeable[n] in kinds]

    widths = ("dim", "channels", "head_dim", None)
    if constraint.kind == "equal":
        return {n: constraint.wanted for n in holding(constraint.name, constraint.value, widths)}
    step, value = constraint.wanted, constraint.value
    grown = max(step, -(-value // step) * step)
    changed = {n: grown for n in holding(constraint.name, value, widths)}
    if changed:
        return changed
    divisor = math.gcd(value, step) or 1
    return {n: divisor for n in holding(constraint.divisor, step, ("heads", "groups", None))}

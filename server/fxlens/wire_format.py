"""How a dataclass crosses as a JSON object: the `wire()` field specifier that says a field's wire name,
whether it is left out at its default and how its value is checked when read, and the two walks that write a
record (`record_to_wire`) and read one back (`record_from_wire`). messages.py declares every message with it.

The checks come in two kinds. The strict ones (`integer`, `string`, ...) raise TypeError on a value of the
wrong kind, which makes the whole line a ProtocolError; the lenient ones (`number_or_none`, `not_false`, ...)
read a trace request's options, where a value of the wrong kind means the default, never a crash.

Shared by both sides: stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, field, fields
from typing import Any

Json = dict[str, Any]  # a message as json.loads gives it
Check = Callable[[Any], Any]  # the field's value as read from the wire -> its value (raises if unusable)


def wire(
    default: Any = MISSING, *, name: str = "", omit: bool = False, check: Check | None = None, factory: Any = MISSING
) -> Any:
    """A message field: its wire `name` when not the field's, `omit`ted from the line at its default, and the
    `check` that turns what was read into the field's value (raising TypeError/ValueError/KeyError if it cannot)."""
    metadata = {"name": name, "omit": omit, "check": check}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _default(item: Any) -> Any:
    if item.default is not MISSING:
        return item.default
    if item.default_factory is not MISSING:
        return item.default_factory()
    return MISSING


def record_to_wire(record: Any) -> Json:
    """A dataclass record as its JSON object, fields in their declared order (nested records as objects)."""
    out = {}
    for item in fields(record):
        value = getattr(record, item.name)
        if item.metadata.get("omit") and value == _default(item):
            continue
        nested = hasattr(value, "__dataclass_fields__")
        out[item.metadata.get("name") or item.name] = record_to_wire(value) if nested else value
    return out


def record_from_wire(cls: Any, data: Json) -> Any:
    """The `cls` record a JSON object holds, each field through its check; KeyError for a missing required one."""
    values = {}
    for item in fields(cls):
        key = item.metadata.get("name") or item.name
        if key not in data:
            if _default(item) is MISSING:
                raise KeyError(f"no `{key}`")
            continue
        check = item.metadata.get("check")
        values[item.name] = check(data[key]) if check is not None else data[key]
    return cls(**values)


# -- strict checks: a value of the wrong kind is a malformed message ------------------------------------


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value


def optional_integer(value: Any) -> int | None:
    return None if value is None else integer(value)


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def optional_string(value: Any) -> str | None:
    return None if value is None else string(value)


def strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not a list")
    return [str(item) for item in value]


def json_object(value: Any) -> Json:
    if not isinstance(value, dict):
        raise TypeError(f"{value!r} is not an object")
    return value


def parsed_by(parse: Callable[[Any], Any]) -> Check:
    """A check that keeps the value as it came, once `parse` has read it without raising."""

    def check(value: Any) -> Any:
        parse(value)
        return value

    return check


# -- lenient readings of a trace request's options: a value of the wrong kind means the default, never a crash


def number_or_none(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def not_false(value: Any) -> bool:
    return value is not False


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def str_list_or_none(value: Any) -> list[str] | None:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def only_strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def str_to_str(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}

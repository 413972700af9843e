"""Reading plain data (a report's JSON) back into its dataclasses; stdlib only, like the reports themselves."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Built = TypeVar("_Built", bound="DataclassInstance")


def from_fields(cls: type[_Built], data: dict[str, Any]) -> _Built:
    """`cls` made of the keys of `data` it declares: a key it does not know (a newer writer's) is dropped,
    a field `data` lacks keeps its default. Nested dataclasses stay plain data: the caller builds them."""
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})

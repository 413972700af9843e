"""The requests of the worker protocol (messages.py): what goes down, server -> worker on its stdin and worker ->
trace child on the child's request pipe, one dataclass each, told apart on the wire by their `type`. How a field
crosses is said with wire_format.py's `wire()`; messages.py holds the registry, the lines and the events.

Shared by both sides: stdlib and the shared top-level modules only, never torch, pygls or an fxlens package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from fxlens.wire_format import (
    Json,
    integer,
    not_false,
    number_or_none,
    only_strings,
    optional_integer,
    optional_string,
    record_from_wire,
    str_list_or_none,
    str_or_none,
    str_to_str,
    string,
    wire,
)

DEFAULT_GUESS_MEMORY_MB = 512  # TraceRequest.guess_memory_mb when the caller says nothing
EXECUTION_POLICIES = ("safe", "full", "off")
# trace children a worker runs at once (a core each on 2 cores); a request past them waits in its queue, and a
# waiting request ends the costs a finished trace is still counting: `fxlens graph` keeps this many files in flight
TRACES_AT_ONCE = 2


def _policy(value: Any) -> str:
    return value if value in EXECUTION_POLICIES else "safe"  # an unknown policy must never mean "run everything"


@dataclass
class PassRequest:
    """A graph pass to run on a request's one class (worker/passes): a built-in, or a user's function in `path`."""

    name: str = wire("", check=str)
    kind: str = wire("builtin", check=lambda v: "user" if v == "user" else "builtin")
    path: str | None = wire(None, omit=True, check=str_or_none)  # the pass's file (a user pass)
    text: str | None = wire(None, omit=True, check=str_or_none)


def _pass_request(value: Any) -> PassRequest | None:
    return record_from_wire(PassRequest, value) if isinstance(value, dict) else None


@dataclass
class TextHeader:
    """The next `size` bytes on the worker's stdin are the UTF-8 text known from now on by `key`."""

    KIND: ClassVar[str] = "text"
    key: str = wire(check=string)
    size: int = wire(name="bytes", check=integer)


@dataclass
class TraceRequest:
    """Trace one buffer. The server names its texts by key (`text_key`, `buffer_keys`) once the worker holds
    them; the worker resolves them and hands the child the request with its texts in it, plus `failed`."""

    KIND: ClassVar[str] = "trace"
    path: str = wire(check=string)
    id: int | None = wire(None, omit=True, check=optional_integer)
    text: str | None = wire(None, omit=True, check=optional_string)
    text_key: str | None = wire(None, omit=True, check=optional_string)
    levels: list[str] = wire(factory=lambda: ["fx", "aten"], check=only_strings)
    execution: str = wire("safe", check=_policy)
    timeout: float | None = wire(None, check=number_or_none)  # seconds; the worker's default when None
    memory_mb: float | None = wire(None, check=number_or_none)
    # the real memory a build without a directive, or real CPU tensors made for a meta module, may take
    guess_memory_mb: float | None = wire(None, check=number_or_none)
    surface: str = wire("editor", check=lambda v: v if v in ("editor", "cli", "check") else "editor")
    cost: bool = wire(True, check=not_false)  # the class costs, counted after `done`
    first: str | None = wire(None, check=str_or_none)  # the class to trace first (the cursor's)
    classes: list[str] | None = wire(None, check=str_list_or_none)  # only these (None: all)
    known: dict[str, str] = wire(factory=dict, check=str_to_str)  # class -> fingerprint the server holds
    roots: list[str] = wire(factory=list, check=lambda v: v if isinstance(v, list) else [])
    buffers: dict[str, str] = wire(factory=dict, check=lambda v: v if isinstance(v, dict) else {})
    buffer_keys: dict[str, str] | None = wire(None, omit=True, check=lambda v: v if isinstance(v, dict) else None)
    notes: bool = wire(True, check=not_false)  # the class notes on the first level (False: deeper levels only)
    without_cost: list[str] = wire(factory=list, omit=True, check=only_strings)  # held without their cost
    pass_request: PassRequest | None = wire(None, name="pass", omit=True, check=_pass_request)
    # rewrites of the findings, each proven on a copy of the buffer (worker/fixes), in the class reports
    fixes: bool = wire(False, omit=True, check=lambda v: v is True)
    # worker -> child: class -> the diagnostic of its hang or crash in an earlier run of this request (left out)
    failed: dict[str, Json] = wire(factory=dict, omit=True, check=lambda v: v if isinstance(v, dict) else {})
    # worker -> child: fix id ("" for every fix) -> its LostProof: its rewrite or its proof hung or crashed the child in
    # an earlier run of this request (worker/fixes/find.py reports the fix not proven, without running that again)
    lost_proofs: dict[str, Json] = wire(factory=dict, omit=True, check=lambda v: v if isinstance(v, dict) else {})
    # worker -> child: class -> the diagnostic (its `level` the level) of a compile level's hang or crash in an earlier
    # run of this request: that level (and the levels compiling through it) left out (worker/process/lost_levels.py)
    lost_levels: dict[str, Json] = wire(factory=dict, omit=True, check=lambda v: v if isinstance(v, dict) else {})


@dataclass
class LostProof:
    """Why a fix is not proven whose rewrite or proof hung or crashed the trace child (process/lost_proofs.py)."""

    why: str = wire("", check=str)
    line: int = wire(0, check=integer)  # the line of the fixed text it was running (0: unknown)
    # the step lost (process/child_location.py's FIX_STEPS): after a lost "rewrite" the rewrite is not run again
    step: str = wire("proof", omit=True, check=str)
    class_name: str = wire("", omit=True, check=str)  # the fix's class (the classes before it are reported whole)


def read_lost_proofs(value: dict[str, Json]) -> dict[str, LostProof]:
    """A request's `lost_proofs` as records (an entry that is not one is dropped)."""
    read = {}
    for fix_id, data in value.items():
        try:
            read[fix_id] = record_from_wire(LostProof, data if isinstance(data, dict) else {})
        except (KeyError, TypeError, ValueError):
            continue
    return read


@dataclass
class Cancel:
    KIND: ClassVar[str] = "cancel"
    id: int = wire(check=integer)


@dataclass
class Shutdown:
    KIND: ClassVar[str] = "shutdown"


@dataclass
class Ping:
    KIND: ClassVar[str] = "ping"
    id: int | None = wire(None, check=optional_integer)


Request = TextHeader | TraceRequest | Cancel | Shutdown | Ping

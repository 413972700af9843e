"""Every message that crosses between the server, the warm worker and a trace child, and its JSON line.

Requests go down (server -> worker on its stdin, worker -> trace child on the child's request pipe) and are
told apart by their `type`; events come up (child -> worker -> server) and are told apart by their `event`.
Each kind is one dataclass below, registered by its wire name in REQUESTS or EVENTS: `encode` writes one,
`decode_request` / `decode_event` read one back, and a line that is not one becomes a ProtocolError (never a
KeyError in the receiver). Receivers dispatch on the decoded class, from a table keyed by it.

The reports themselves (`report.py`, `pass_report.py`) travel as their own versioned JSON inside the events:
a class event is the one large message (15 KB a class), and the worker relays it as the child wrote it, so it
is parsed into a ClassReport once, by the server (`ClassTraced.read`). Buffer texts cross as raw UTF-8 after
a TextHeader line (engine/sent_texts.py -> worker/process/texts.py), not inside JSON.

Shared by both sides: stdlib and report.py only, never torch, pygls or another fxlens package.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from fxlens.pass_report import PassReport, pass_from_json
from fxlens.report import (
    ClassReport,
    Cost,
    Diagnostic,
    FileReport,
    class_from_json,
    cost_from_json,
    file_from_json,
    to_json,
)

# raised when a message's meaning changes; the worker says its own in `ready`, and the server refuses another
PROTOCOL_VERSION = 2
Json = dict[str, Any]  # a message as json.loads gives it
REQUEST_KEY = "type"
EVENT_KEY = "event"
EXECUTION_POLICIES = ("safe", "full", "off")


class ProtocolError(ValueError):
    """A line that is not a message of this protocol: what is wrong with it, and the job it names if any."""

    def __init__(self, problem: str, job_id: int | None = None, kind: str = "") -> None:
        super().__init__(problem)
        self.problem, self.job_id, self.kind = problem, job_id, kind


# -- how a field crosses -------------------------------------------------------------------------------

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


def _to_wire(record: Any) -> Json:
    out = {}
    for item in fields(record):
        value = getattr(record, item.name)
        if item.metadata.get("omit") and value == _default(item):
            continue
        nested = hasattr(value, "__dataclass_fields__")
        out[item.metadata.get("name") or item.name] = _to_wire(value) if nested else value
    return out


def _from_wire(cls: Any, data: Json) -> Any:
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


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not a list")
    return [str(item) for item in value]


def _object(value: Any) -> Json:
    if not isinstance(value, dict):
        raise TypeError(f"{value!r} is not an object")
    return value


# lenient readings of a trace request's options: a value of the wrong kind means the default, never a crash
def _number_or_none(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _not_false(value: Any) -> bool:
    return value is not False


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _str_list_or_none(value: Any) -> list[str] | None:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def _only_strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def _str_to_str(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _policy(value: Any) -> str:
    return value if value in EXECUTION_POLICIES else "safe"  # an unknown policy must never mean "run everything"


# -- requests: server -> worker, worker -> trace child ------------------------------------------------------


@dataclass
class PassRequest:
    """A graph pass to run on a request's one class (worker/passes): a built-in, or a user's function in `path`."""

    name: str = wire("", check=str)
    kind: str = wire("builtin", check=lambda v: "user" if v == "user" else "builtin")
    path: str | None = wire(None, omit=True, check=_str_or_none)  # the pass's file (a user pass)
    text: str | None = wire(None, omit=True, check=_str_or_none)


def _pass_request(value: Any) -> PassRequest | None:
    return _from_wire(PassRequest, value) if isinstance(value, dict) else None


@dataclass
class TextHeader:
    """The next `size` bytes on the worker's stdin are the UTF-8 text known from now on by `key`."""

    KIND: ClassVar[str] = "text"
    key: str = wire(check=_str)
    size: int = wire(name="bytes", check=_int)


@dataclass
class TraceRequest:
    """Trace one buffer. The server names its texts by key (`text_key`, `buffer_keys`) once the worker holds
    them; the worker resolves them and hands the child the request with its texts in it, plus `failed`."""

    KIND: ClassVar[str] = "trace"
    path: str = wire(check=_str)
    id: int | None = wire(None, omit=True, check=_optional_int)
    text: str | None = wire(None, omit=True, check=_optional_str)
    text_key: str | None = wire(None, omit=True, check=_optional_str)
    levels: list[str] = wire(factory=lambda: ["fx", "aten"], check=_only_strings)
    execution: str = wire("safe", check=_policy)
    timeout: float | None = wire(None, check=_number_or_none)  # seconds; the worker's default when None
    memory_mb: float | None = wire(None, check=_number_or_none)
    surface: str = wire("editor", check=lambda v: v if v in ("editor", "cli", "check") else "editor")
    cost: bool = wire(True, check=_not_false)  # the class costs, counted after `done`
    first: str | None = wire(None, check=_str_or_none)  # the class to trace first (the cursor's)
    classes: list[str] | None = wire(None, check=_str_list_or_none)  # only these (None: all)
    known: dict[str, str] = wire(factory=dict, check=_str_to_str)  # class -> fingerprint the server holds
    roots: list[str] = wire(factory=list, check=lambda v: v if isinstance(v, list) else [])
    buffers: dict[str, str] = wire(factory=dict, check=lambda v: v if isinstance(v, dict) else {})
    buffer_keys: dict[str, str] | None = wire(None, omit=True, check=lambda v: v if isinstance(v, dict) else None)
    notes: bool = wire(True, check=_not_false)  # the class notes on the first level (False: deeper levels only)
    without_cost: list[str] = wire(factory=list, omit=True, check=_only_strings)  # held without their cost
    pass_request: PassRequest | None = wire(None, name="pass", omit=True, check=_pass_request)
    # worker -> child: class -> the diagnostic of its hang or crash in an earlier run of this request (left out)
    failed: dict[str, Json] = wire(factory=dict, omit=True, check=lambda v: v if isinstance(v, dict) else {})


@dataclass
class Cancel:
    KIND: ClassVar[str] = "cancel"
    id: int = wire(check=_int)


@dataclass
class Shutdown:
    KIND: ClassVar[str] = "shutdown"


@dataclass
class Ping:
    KIND: ClassVar[str] = "ping"
    id: int | None = wire(None, check=_optional_int)


# -- events: trace child -> worker -> server ----------------------------------------------------------------


def _recipe(value: Any) -> Json:
    """A warm-up recipe's shape (worker/process/warm_up.py); what a child sends may come from user code."""
    if not (
        isinstance(value, dict)
        and isinstance(value.get("placeholders"), list)
        and isinstance(value.get("nodes"), list)
        and isinstance(value.get("seconds"), (int, float))
    ):
        raise TypeError("not a warm-up recipe")
    return value


def _class_json(value: Any) -> Json:
    data = _object(value)
    _str(data["name"])  # the rest is read once, by the server (ClassTraced.read)
    return data


def _parsed_by(parse: Callable[[Any], Any]) -> Check:
    def check(value: Any) -> Any:
        parse(value)
        return value

    return check


@dataclass
class Ready:
    """The worker's first line: torch imported, requests welcome."""

    KIND: ClassVar[str] = "ready"
    pid: int = wire(check=_int)
    executable: str = wire("", check=_str)
    python: str = wire("", check=_str)
    torch: str = wire("", check=_str)
    protocol: int = wire(PROTOCOL_VERSION, check=_int)


@dataclass
class Fatal:
    """The worker's first and last line: this interpreter cannot run fxlens (no torch, too old)."""

    KIND: ClassVar[str] = "fatal"
    message: str = wire(check=_str)
    fix: str = wire("", check=_str)


@dataclass
class RequestError:
    """A request the worker could not read: its job (when it named one) fails with this message."""

    KIND: ClassVar[str] = "error"
    message: str = wire(check=_str)
    id: int | None = wire(None, omit=True, check=_optional_int)


@dataclass
class UnknownText:
    """The worker no longer holds these texts: the server sends the request again with its texts in it."""

    KIND: ClassVar[str] = "unknown-text"
    id: int | None = wire(None, check=_optional_int)
    keys: list[str] = wire(factory=list, check=_strings)


@dataclass
class Pong:
    KIND: ClassVar[str] = "pong"
    id: int | None = wire(None, check=_optional_int)


@dataclass
class Cancelled:
    KIND: ClassVar[str] = "cancelled"
    id: int | None = wire(None, check=_optional_int)


@dataclass
class Started:
    """The child read its request: from here on its death is the trace's (child -> worker only)."""

    KIND: ClassVar[str] = "started"
    id: int | None = wire(None, omit=True, check=_optional_int)


@dataclass
class Aborted:
    """User code raised through the whole analysis; the diagnostic the worker reports (child -> worker only)."""

    KIND: ClassVar[str] = "aborted"
    diagnostic: Json = wire(check=_parsed_by(lambda d: Diagnostic(**d)))
    id: int | None = wire(None, omit=True, check=_optional_int)


@dataclass
class WarmUpRecipe:
    """A graph the next trace child exports while it waits (child -> worker only)."""

    KIND: ClassVar[str] = "warm-up-recipe"
    recipe: Json = wire(check=_recipe)
    id: int | None = wire(None, omit=True, check=_optional_int)


@dataclass
class ClassTraced:
    """A class's levels finished since its last event, as report.ClassReport's JSON (parsed by `read`)."""

    KIND: ClassVar[str] = "class"
    report: Json = wire(name="class", check=_class_json)
    id: int | None = wire(None, omit=True, check=_optional_int)

    @classmethod
    def of(cls, report: ClassReport) -> ClassTraced:
        return cls(to_json(report))

    def read(self) -> ClassReport:
        return class_from_json(self.report)


@dataclass
class Stage:
    """Every class of the request has these (cheap) levels; the deeper ones follow."""

    KIND: ClassVar[str] = "stage"
    levels: list[str] = wire(check=_strings)
    id: int | None = wire(None, omit=True, check=_optional_int)


@dataclass
class PassDone:
    """What the request's graph pass found (pass_report.PassReport's JSON)."""

    KIND: ClassVar[str] = "pass"
    result: Json = wire(name="pass", check=_parsed_by(pass_from_json))
    id: int | None = wire(None, omit=True, check=_optional_int)

    def read(self) -> PassReport:
        return pass_from_json(self.result)


@dataclass
class Done:
    """The file-level report (the classes came one event at a time); `costs`: the class costs follow, then End."""

    KIND: ClassVar[str] = "done"
    report: Json = wire(check=_parsed_by(file_from_json))
    costs: bool = wire(False, omit=True, check=lambda v: v is True)
    id: int | None = wire(None, omit=True, check=_optional_int)

    def read(self) -> FileReport:
        return file_from_json(self.report)


@dataclass
class ClassCost:
    """One class's cost, counted after `done`, for the fingerprint it was counted for."""

    KIND: ClassVar[str] = "cost"
    class_name: str = wire(name="class", check=_str)
    cost: Json = wire(check=_parsed_by(cost_from_json))
    fingerprint: str | None = wire(None, check=_str_or_none)
    id: int | None = wire(None, omit=True, check=_optional_int)

    def read(self) -> Cost:
        return cost_from_json(self.cost)


@dataclass
class End:
    """The request's child is gone: no more of its costs come."""

    KIND: ClassVar[str] = "end"
    id: int | None = wire(None, omit=True, check=_optional_int)


Request = TextHeader | TraceRequest | Cancel | Shutdown | Ping
Event = (
    Ready
    | Fatal
    | RequestError
    | UnknownText
    | Pong
    | Cancelled
    | Started
    | Aborted
    | WarmUpRecipe
    | ClassTraced
    | Stage
    | PassDone
    | Done
    | ClassCost
    | End
)
Message = Request | Event

# what a trace child writes on its channel (anything else there is user code's)
CHILD_EVENTS = (Started, Aborted, WarmUpRecipe, ClassTraced, Stage, PassDone, Done, ClassCost, End)
REQUESTS: dict[str, type] = {cls.KIND: cls for cls in (TextHeader, TraceRequest, Cancel, Shutdown, Ping)}
EVENTS: dict[str, type] = {
    cls.KIND: cls
    for cls in (
        Ready,
        Fatal,
        RequestError,
        UnknownText,
        Pong,
        Cancelled,
        Started,
        Aborted,
        WarmUpRecipe,
        ClassTraced,
        Stage,
        PassDone,
        Done,
        ClassCost,
        End,
    )
}


# -- the lines ---------------------------------------------------------------------------------------------


def to_wire(message: Message) -> Json:
    """A message as the JSON object its line holds (`id` first, as the worker's relay writes it)."""
    key = REQUEST_KEY if type(message) in REQUESTS.values() else EVENT_KEY
    data = _to_wire(message)
    head = {"id": data.pop("id")} if "id" in data else {}
    return {**head, key: type(message).KIND, **data}


def encode(message: Message) -> str:
    """A message as one line, newline included."""
    return json.dumps(to_wire(message)) + "\n"


def _read(line: bytes | str | Json, key: str, table: dict[str, type]) -> Any:
    if isinstance(line, dict):
        data: Any = line
    else:
        try:
            data = json.loads(line)
        except ValueError as error:
            raise ProtocolError(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ProtocolError("a message is a JSON object")
    job_id = data.get("id") if isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool) else None
    kind = data.get(key)
    cls = table.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown {key} {kind!r}", job_id)
    try:
        return _from_wire(cls, data)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ProtocolError(f"a malformed `{kind}` {key}: {error}", job_id, str(kind)) from None


def decode_request(line: bytes | str | Json) -> Request:
    """The request a line holds; ProtocolError if it holds none."""
    request: Request = _read(line, REQUEST_KEY, REQUESTS)
    return request


def decode_event(line: bytes | str | Json) -> Event:
    """The event a line holds; ProtocolError if it holds none."""
    event: Event = _read(line, EVENT_KEY, EVENTS)
    return event


def child_event(line: bytes) -> Event | None:
    """A trace child's event if `line` is one the worker may relay as it is (with_job_id), else None (user code
    wrote it: the child's channel writes ASCII JSON, `{` first, naming no job). Only the class event's name is
    read here; the rest of it is read once, by the server."""
    if line[:1] != b"{" or not line.isascii():
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or "id" in data:
        return None
    try:
        event = decode_event(data)
    except ProtocolError:
        return None
    return event if isinstance(event, CHILD_EVENTS) else None


def with_job_id(job_id: int, line: bytes) -> str:
    """A child's event line, as child_event accepted it, with its job's id put first: relayed as the child
    wrote it, so that a class event of tens of KB is not turned into JSON a second time."""
    return f'{{"id": {job_id:d}, {line[1:].decode("ascii")}\n'

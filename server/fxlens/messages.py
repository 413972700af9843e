"""Every message that crosses between the server, the warm worker and a trace child, and its JSON line.

Requests go down (server -> worker on its stdin, worker -> trace child on the child's request pipe) and are
told apart by their `type`; events come up (child -> worker -> server) and are told apart by their `event`.
Each kind is one dataclass below, registered by its wire name in REQUESTS or EVENTS: `encode` writes one,
`decode_request` / `decode_event` read one back, and a line that is not one becomes a ProtocolError (never a
KeyError in the receiver). Receivers dispatch on the decoded class, from a table keyed by it. How a field
crosses (its wire name, its default, the check of what was read) is said with wire_format.py's `wire()`.

The reports themselves (`report.py`, `pass_report.py`) travel as their own versioned JSON inside the events:
a class event is the one large message (15 KB a class), and the worker relays it as the child wrote it, so it
is parsed into a ClassReport once, by the server (`ClassTraced.read`). Buffer texts cross as raw UTF-8 after
a TextHeader line (engine/sent_texts.py -> worker/process/texts.py), not inside JSON.

Shared by both sides: stdlib and the shared top-level modules only (report.py, pass_report.py, wire_format.py),
never torch, pygls or an fxlens package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, get_args

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
from fxlens.wire_format import (
    Json,
    integer,
    json_object,
    not_false,
    number_or_none,
    only_strings,
    optional_integer,
    optional_string,
    parsed_by,
    record_from_wire,
    record_to_wire,
    str_list_or_none,
    str_or_none,
    str_to_str,
    string,
    strings,
    wire,
)

# raised when a message's meaning changes; the worker says its own in `ready`, and the server refuses another
PROTOCOL_VERSION = 2
DEFAULT_GUESS_MEMORY_MB = 512  # TraceRequest.guess_memory_mb when the caller says nothing
REQUEST_KEY = "type"
EVENT_KEY = "event"
EXECUTION_POLICIES = ("safe", "full", "off")


class ProtocolError(ValueError):
    """A line that is not a message of this protocol: what is wrong with it, and the job it names if any."""

    def __init__(self, problem: str, job_id: int | None = None, kind: str = "") -> None:
        super().__init__(problem)
        self.problem, self.job_id, self.kind = problem, job_id, kind


def _policy(value: Any) -> str:
    return value if value in EXECUTION_POLICIES else "safe"  # an unknown policy must never mean "run everything"


# -- requests: server -> worker, worker -> trace child ------------------------------------------------------


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
    data = json_object(value)
    string(data["name"])  # the rest is read once, by the server (ClassTraced.read)
    return data


@dataclass
class Ready:
    """The worker's first line: torch imported, requests welcome."""

    KIND: ClassVar[str] = "ready"
    pid: int = wire(check=integer)
    executable: str = wire("", check=string)
    python: str = wire("", check=string)
    torch: str = wire("", check=string)
    protocol: int = wire(PROTOCOL_VERSION, check=integer)


@dataclass
class Fatal:
    """The worker's first and last line: this interpreter cannot run fxlens (no torch, too old)."""

    KIND: ClassVar[str] = "fatal"
    message: str = wire(check=string)
    fix: str = wire("", check=string)


@dataclass
class RequestError:
    """A request the worker could not read: its job (when it named one) fails with this message."""

    KIND: ClassVar[str] = "error"
    message: str = wire(check=string)
    id: int | None = wire(None, omit=True, check=optional_integer)


@dataclass
class UnknownText:
    """The worker no longer holds these texts: the server sends the request again with its texts in it."""

    KIND: ClassVar[str] = "unknown-text"
    id: int | None = wire(None, check=optional_integer)
    keys: list[str] = wire(factory=list, check=strings)


@dataclass
class Pong:
    KIND: ClassVar[str] = "pong"
    id: int | None = wire(None, check=optional_integer)


@dataclass
class Cancelled:
    KIND: ClassVar[str] = "cancelled"
    id: int | None = wire(None, check=optional_integer)


@dataclass
class Started:
    """The child read its request: from here on its death is the trace's (child -> worker only)."""

    KIND: ClassVar[str] = "started"
    id: int | None = wire(None, omit=True, check=optional_integer)


@dataclass
class Aborted:
    """User code raised through the whole analysis; the diagnostic the worker reports (child -> worker only)."""

    KIND: ClassVar[str] = "aborted"
    diagnostic: Json = wire(check=parsed_by(lambda d: Diagnostic(**d)))
    id: int | None = wire(None, omit=True, check=optional_integer)


@dataclass
class WarmUpRecipe:
    """A graph the next trace child exports while it waits (child -> worker only)."""

    KIND: ClassVar[str] = "warm-up-recipe"
    recipe: Json = wire(check=_recipe)
    id: int | None = wire(None, omit=True, check=optional_integer)


@dataclass
class ClassTraced:
    """A class's levels finished since its last event, as report.ClassReport's JSON (parsed by `read`)."""

    KIND: ClassVar[str] = "class"
    report: Json = wire(name="class", check=_class_json)
    id: int | None = wire(None, omit=True, check=optional_integer)

    @classmethod
    def of(cls, report: ClassReport) -> ClassTraced:
        return cls(to_json(report))

    def read(self) -> ClassReport:
        return class_from_json(self.report)


@dataclass
class Stage:
    """Every class of the request has these (cheap) levels; the deeper ones follow."""

    KIND: ClassVar[str] = "stage"
    levels: list[str] = wire(check=strings)
    id: int | None = wire(None, omit=True, check=optional_integer)


@dataclass
class PassDone:
    """What the request's graph pass found (pass_report.PassReport's JSON)."""

    KIND: ClassVar[str] = "pass"
    result: Json = wire(name="pass", check=parsed_by(pass_from_json))
    id: int | None = wire(None, omit=True, check=optional_integer)

    def read(self) -> PassReport:
        return pass_from_json(self.result)


@dataclass
class Done:
    """The file-level report (the classes came one event at a time); `costs`: the class costs follow, then End."""

    KIND: ClassVar[str] = "done"
    report: Json = wire(check=parsed_by(file_from_json))
    costs: bool = wire(False, omit=True, check=lambda v: v is True)
    id: int | None = wire(None, omit=True, check=optional_integer)

    def read(self) -> FileReport:
        return file_from_json(self.report)


@dataclass
class ClassCost:
    """One class's cost, counted after `done`, for the fingerprint it was counted for."""

    KIND: ClassVar[str] = "cost"
    class_name: str = wire(name="class", check=string)
    cost: Json = wire(check=parsed_by(cost_from_json))
    fingerprint: str | None = wire(None, check=str_or_none)
    id: int | None = wire(None, omit=True, check=optional_integer)

    def read(self) -> Cost:
        return cost_from_json(self.cost)


@dataclass
class End:
    """The request's child is gone: no more of its costs come."""

    KIND: ClassVar[str] = "end"
    id: int | None = wire(None, omit=True, check=optional_integer)


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
# each message's class by its wire name, in the unions' order
REQUESTS: dict[str, type] = {cls.KIND: cls for cls in get_args(Request)}
EVENTS: dict[str, type] = {cls.KIND: cls for cls in get_args(Event)}


# -- the lines ---------------------------------------------------------------------------------------------


def to_wire(message: Message) -> Json:
    """A message as the JSON object its line holds (`id` first, as the worker's relay writes it)."""
    key = REQUEST_KEY if type(message) in REQUESTS.values() else EVENT_KEY
    data = record_to_wire(message)
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
        return record_from_wire(cls, data)
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

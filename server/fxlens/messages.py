"""Every message that crosses between the server, the warm worker and a trace child, and its JSON line.

Requests go down (server -> worker on its stdin, worker -> trace child on the child's request pipe) and are
told apart by their `type` (their dataclasses are in worker_requests.py, named from here too); events come up
(child -> worker -> server) and are told apart by their `event`. Each kind is one dataclass, registered by its
wire name in REQUESTS or EVENTS: `encode` writes one, `decode_request` / `decode_event` read one back, and a line
that is not one becomes a ProtocolError (never a KeyError in the receiver). Receivers dispatch on the decoded
class, from a table keyed by it. How a field crosses (its wire name, its default, the check of what was read)
is said with wire_format.py's `wire()`.

The reports themselves (`report.py`, `pass_report.py`) travel as their own versioned JSON inside the events:
a class event is the one large message (15 KB a class), and the worker relays it as the child wrote it, so it
is parsed into a ClassReport once, by the server (`ClassTraced.read`). Buffer texts cross as raw UTF-8 after
a TextHeader line (engine/sent_texts.py -> worker/process/texts.py), not inside JSON.

Shared by both sides: stdlib and the shared top-level modules only (report.py, pass_report.py, wire_format.py,
worker_requests.py), never torch, pygls or an fxlens package.
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
    optional_integer,
    parsed_by,
    record_from_wire,
    record_to_wire,
    str_or_none,
    string,
    strings,
    wire,
)

# the requests, named from here too: receivers read every message from this module
from fxlens.worker_requests import DEFAULT_GUESS_MEMORY_MB as DEFAULT_GUESS_MEMORY_MB
from fxlens.worker_requests import EXECUTION_POLICIES as EXECUTION_POLICIES
from fxlens.worker_requests import TRACES_AT_ONCE as TRACES_AT_ONCE
from fxlens.worker_requests import Cancel as Cancel
from fxlens.worker_requests import LostProof as LostProof
from fxlens.worker_requests import PassRequest as PassRequest
from fxlens.worker_requests import Ping as Ping
from fxlens.worker_requests import Request as Request
from fxlens.worker_requests import Shutdown as Shutdown
from fxlens.worker_requests import TextHeader as TextHeader
from fxlens.worker_requests import TraceRequest as TraceRequest
from fxlens.worker_requests import read_lost_proofs as read_lost_proofs

# raised when a message's meaning changes; the worker says its own in `ready`, and the server refuses another
PROTOCOL_VERSION = 2
REQUEST_KEY = "type"
EVENT_KEY = "event"


class ProtocolError(ValueError):
    """A line that is not a message of this protocol: what is wrong with it, and the job it names if any."""

    def __init__(self, problem: str, job_id: int | None = None, kind: str = "") -> None:
        super().__init__(problem)
        self.problem, self.job_id, self.kind = problem, job_id, kind


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

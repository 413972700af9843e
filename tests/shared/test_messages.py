"""The messages between server, worker and trace child (fxlens/messages.py): every registered kind survives
its line, and a line that is no message becomes a ProtocolError (a logged error, a failed request), never a
KeyError in whoever reads it."""

from __future__ import annotations

import asyncio
import json

import pytest
from fxlens import messages
from fxlens.engine.worker_client import WorkerClient, WorkerProtocolError
from fxlens.messages import EVENTS, REQUESTS, ProtocolError
from fxlens.pass_report import PassReport, pass_to_json
from fxlens.report import ClassReport, Cost, Diagnostic, FileReport, LevelResult, to_json

DIAGNOSTIC = to_json(Diagnostic(3, 4, 3, 9, "error", "trace", "RuntimeError: no", fix="Do not."))
CLASS = to_json(ClassReport("Block", 3, 9, levels={"fx": LevelResult("fx", True)}))

# one message of every kind, its optional fields set where it has them
SAMPLES = [
    messages.TextHeader("t1", 42),
    messages.TraceRequest(
        "/p/m.py",
        id=4,
        text_key="t1",
        levels=["fx", "aten", "backward"],
        execution="full",
        timeout=30.0,
        memory_mb=2048,
        surface="cli",
        cost=False,
        first="Block",
        classes=["Block"],
        known={"Head": "ab12"},
        roots=["/p"],
        buffer_keys={"/p/n.py": "t2"},
        notes=False,
        without_cost=["Head"],
        failed={"Head": DIAGNOSTIC},
        pass_request=messages.PassRequest("fuse", "user", "/p/passes.py", "x\n"),
    ),
    messages.Cancel(4),
    messages.Shutdown(),
    messages.Ping(9),
    messages.Ready(123, "/usr/bin/python3", "3.11.2", "2.13.0"),
    messages.Fatal("torch cannot be imported", "Install it."),
    messages.RequestError("bad request: no `path`", id=4),
    messages.UnknownText(4, ["t1", "t2"]),
    messages.Pong(9),
    messages.Cancelled(4),
    messages.Started(),
    messages.Aborted(DIAGNOSTIC),
    messages.WarmUpRecipe({"placeholders": [], "nodes": [], "seconds": 0.1}),
    messages.ClassTraced(CLASS, id=4),
    messages.Stage(["fx", "aten"], id=4),
    messages.PassDone(pass_to_json(PassReport("fuse", "user", "Block", "/p/m.py")), id=4),
    messages.Done(to_json(FileReport("/p/m.py", unchanged=["Head"])), costs=True, id=4),
    messages.ClassCost("Block", to_json(Cost(parameters=10, forward_flops=200)), "ab12", id=4),
    messages.End(id=4),
]


def test_every_registered_kind_has_a_sample_here():
    registered = [*REQUESTS.values(), *EVENTS.values()]
    assert sorted(type(m).__name__ for m in SAMPLES) == sorted(c.__name__ for c in registered)


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).KIND)
def test_a_message_survives_its_line(message):
    line = messages.encode(message)
    assert line.endswith("\n") and "\n" not in line[:-1]
    decode = messages.decode_request if type(message) in REQUESTS.values() else messages.decode_event
    assert decode(line) == message
    assert decode(line.encode()) == message


def test_the_wire_keeps_its_keys():
    assert json.loads(messages.encode(messages.TextHeader("t1", 3))) == {"type": "text", "key": "t1", "bytes": 3}
    cost = messages.ClassCost("Block", {}, None, id=4)
    assert messages.to_wire(cost) == {"id": 4, "event": "cost", "class": "Block", "cost": {}, "fingerprint": None}
    assert messages.to_wire(messages.Done({"version": 1}, id=4)) == {"id": 4, "event": "done", "report": {"version": 1}}
    assert list(messages.to_wire(messages.ClassTraced(CLASS, id=7))) == ["id", "event", "class"]


def test_a_relayed_child_line_is_the_same_event_with_its_job_id():
    line = messages.encode(messages.ClassTraced(CLASS)).rstrip("\n").encode()
    assert messages.decode_event(messages.with_job_id(7, line)) == messages.ClassTraced(CLASS, id=7)
    # what only the worker may say is not a child's
    assert messages.child_event(messages.encode(messages.Ready(1)).encode()) is None


@pytest.mark.parametrize(
    "line, problem",
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "a JSON object"),
        (b'{"event": "telepathy", "id": 3}', "unknown event 'telepathy'"),
        (b'{"id": 3}', "unknown event None"),
        (b'{"id": 3, "event": "done"}', "malformed `done`"),
        (b'{"id": 3, "event": "done", "report": {"version": 99}}', "malformed `done`"),
        (b'{"id": 3, "event": "class", "class": ["Block"]}', "malformed `class`"),
        (b'{"id": 3, "event": "stage", "levels": "fx"}', "malformed `stage`"),
        (b'{"id": "3", "event": "end"}', "malformed `end`"),
    ],
)
def test_a_line_that_is_no_event_is_a_protocol_error(line, problem):
    with pytest.raises(ProtocolError, match=problem.replace("(", r"\(")) as raised:
        messages.decode_event(line)
    assert raised.value.job_id == (3 if b'"id": 3' in line else None)


def test_an_unknown_request_is_a_protocol_error_and_a_bad_option_its_default():
    with pytest.raises(ProtocolError, match="unknown type 'teleport'"):
        messages.decode_request(b'{"type": "teleport", "id": 1}')
    with pytest.raises(ProtocolError, match="malformed `cancel`"):
        messages.decode_request(b'{"type": "cancel"}')
    odd = messages.decode_request(
        b'{"type": "trace", "id": 1, "path": "/m.py", "text": "", "execution": "rm -rf",'
        b' "timeout": "soon", "cost": 0, "known": {"A": 1, "B": "f"},'
        b' "without_cost": [1, "C"]}'
    )
    assert (odd.execution, odd.timeout, odd.cost, odd.known, odd.without_cost) == (
        "safe",
        None,
        True,
        {"B": "f"},
        ["C"],
    )


async def test_the_server_logs_an_event_it_cannot_read_and_fails_that_request_with_a_clear_error():
    client = WorkerClient()
    loop = asyncio.get_running_loop()
    futures = {job_id: loop.create_future() for job_id in (3, 4, 5)}
    for job_id, future in futures.items():
        client._pending[job_id] = (future, None, {})
    client._dispatch(b"garbage\n")
    client._dispatch(b'{"id": 3, "event": "telepathy"}\n')  # a worker of another version
    client._dispatch(b'{"id": 4, "event": "done", "report": {"path": "/m.py"}}\n')  # no report version
    client._dispatch(messages.encode(messages.RequestError("bad request: no `path`", id=5)).encode())
    for job_id in (3, 4, 5):
        with pytest.raises(WorkerProtocolError) as raised:
            await futures[job_id]
        assert "fxlens's worker" in raised.value.message and raised.value.fix
    assert sum("worker protocol error" in line for line in client.stderr_lines) == 4

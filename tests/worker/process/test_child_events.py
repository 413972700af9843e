"""What the worker relays of a trace child's channel: the child's events as it wrote them, with their job's
id, and nothing user code writes there that the server could mistake for one."""

from __future__ import annotations

import asyncio
import json

from fxlens.engine.worker_client import WorkerClient
from fxlens.messages import child_event as _child_event
from fxlens.messages import to_wire, with_job_id
from fxlens.report import ClassReport, FileReport, LevelResult, to_json

CLASS = {"event": "class", "class": to_json(ClassReport("Block", 3, 9, levels={"fx": LevelResult("fx", True)}))}


def _line(event: dict) -> bytes:
    return json.dumps(event).encode()  # as the child's channel writes it


def test_a_relayed_event_is_the_childs_with_its_job_id():
    for event in (
        CLASS,
        {"event": "stage", "levels": ["fx", "aten"]},
        {"event": "done", "report": to_json(FileReport("/p/m.py")), "costs": True},
    ):
        line = _line(event)
        assert to_wire(_child_event(line)) == event
        assert json.loads(with_job_id(7, line)) == {"id": 7, **event}
        assert with_job_id(7, line).endswith("}\n")


def test_what_is_not_the_channels_own_writing_is_not_relayed():
    assert _child_event(_line({**CLASS, "id": 1})) is None  # naming another request
    assert _child_event(b" " + _line(CLASS)) is None
    assert _child_event(json.dumps(CLASS, ensure_ascii=False).replace("Block", "Bl\u00f6ck").encode()) is None
    assert _child_event(_line({"event": "class", "class": ["Block"]})) is None
    assert _child_event(b'{"event": "class"') is None


async def test_a_class_event_the_server_cannot_read_is_skipped_and_the_trace_still_reports():
    client = WorkerClient()
    future = asyncio.get_running_loop().create_future()
    classes: dict[str, ClassReport] = {}
    client._pending[3] = (future, None, classes)
    client._dispatch(with_job_id(3, _line({"event": "class", "class": {"name": "Forged"}})).encode())
    client._dispatch(with_job_id(3, _line(CLASS)).encode())
    client._dispatch(with_job_id(3, _line({"event": "done", "report": to_json(FileReport("/p/m.py"))})).encode())
    report = await future
    assert [c.name for c in report.classes] == ["Block"]
    assert any("cannot read" in line for line in client.stderr_lines)

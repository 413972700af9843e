"""Pure pieces of issue 17's hardening: the channel's limit, the quarantine of worker-killing files."""

from __future__ import annotations

import os

import pytest
from fxlens.engine.quarantine import Quarantine
from fxlens.messages import ClassTraced, decode_event, to_wire
from fxlens.worker.failures.limits import MAX_EVENT_BYTES, bounded
from fxlens.worker.process.channel import Channel, EventTooLarge
from fxlens.worker.process.postmortem import read_dump, too_large


def test_an_event_over_the_limit_is_not_written_and_fails_its_own_class():
    read, write = os.pipe()
    try:
        channel = Channel(write, os.getpid(), read)
        huge = ClassTraced(
            {
                "name": "Huge",
                "line": 7,
                "end_line": 9,
                "levels": {"fx": {"level": "fx", "ok": True, "code": "x" * MAX_EVENT_BYTES}},
            }
        )
        with pytest.raises(EventTooLarge) as raised:
            channel.send(to_wire(huge))
        smaller = too_large(huge, raised.value.size)
        channel.send(to_wire(smaller))
        event = decode_event(os.read(read, 1 << 20))
    finally:
        os.close(read), os.close(write)
    report = event.read()
    (diagnostic,) = report.diagnostics()
    assert (report.name, diagnostic.line, diagnostic.category) == ("Huge", 7, "too-large")
    assert "over fxlens's limit of 16 MB" in diagnostic.message and not report.levels["fx"].ok


def test_bounded_says_how_much_it_left_out():
    assert bounded("abc", 5) == "abc"
    assert bounded("a" * 10, 4) == "aaaa… (6 more characters)"


def test_a_file_that_kills_the_worker_twice_is_held_and_an_edit_tries_again():
    quarantine = Quarantine()
    quarantine.record_death([("/p/bad.py", "v1"), ("/p/good.py", "g")], "the worker was killed (SIGKILL)")
    assert quarantine.runs_alone("/p/bad.py") and quarantine.runs_alone("/p/good.py")
    assert quarantine.report_for("/p/bad.py", "v1") is None  # two in flight: nobody is blamed yet
    quarantine.traced("/p/good.py")
    assert not quarantine.runs_alone("/p/good.py")
    for _ in range(2):
        quarantine.record_death([("/p/bad.py", "v1")], "the worker was killed (SIGKILL)")
    held = quarantine.report_for("/p/bad.py", "v1")
    (diagnostic,) = held.diagnostics
    assert diagnostic.category == "crash" and "killed fxlens's worker process 2 times" in diagnostic.message
    assert quarantine.report_for("/p/good.py", "g") is None
    assert quarantine.report_for("/p/bad.py", "v2") is None  # edited: tried again ...
    quarantine.record_death([("/p/bad.py", "v2")], "the worker was killed (SIGKILL)")
    assert quarantine.report_for("/p/bad.py", "v2") is not None  # ... and held again after one more death


_RECURSING = "\n".join(["import torch", "", "", "", "", "", "def down(n):", "    return down(n + 1) + 1", ""])


def _dumped(tmp_path, frames):
    dump = tmp_path / "dump"
    dump.write_text(
        "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
        + "".join(f'  File "{path}", line {line} in {name}\n' for path, line, name in frames)
    )
    return os.open(dump, os.O_RDONLY)


def test_a_timeout_caught_as_a_frame_enters_its_function_names_the_line_that_called_it(tmp_path):
    user = str(tmp_path / "deep.py")
    fd = _dumped(tmp_path, [(user, 7, "down"), (user, 8, "down"), (user, 8, "down"), ("/torch/nn.py", 3, "f")])
    try:
        assert read_dump(fd, user, _RECURSING)[0] == 8
    finally:
        os.close(fd)


def test_a_frame_at_a_def_line_with_no_caller_of_the_file_still_names_that_line(tmp_path):
    user = str(tmp_path / "deep.py")
    fd = _dumped(tmp_path, [(user, 7, "down"), ("/torch/nn.py", 3, "f")])
    try:
        assert read_dump(fd, user, _RECURSING)[0] == 7
    finally:
        os.close(fd)

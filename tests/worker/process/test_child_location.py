"""Where a trace child is (process/child_location.py): the line of the user's file it runs, kept in memory
shared with the worker, so that a hang or a timeout is named at its line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[3] / "server"

_LOCATION_WHILE_HANDLING = r"""
import time
from fxlens.worker.process.child_location import ChildLocation

PATH = "/nowhere/deep.py"
SOURCE = "\n".join([
    "def down(n, seen):",
    "    if n == 300:",
    "        while not seen():",
    "            pass",
    "        raise RuntimeError('deep')",
    "    return down(n + 1, seen) + 1",
])
namespace = {}
exec(compile(SOURCE, PATH, "exec"), namespace)
location = ChildLocation()
location.at_class("Deep")
location.start_sampling(PATH)


def samples_later(count):
    start = location.read()[2]
    deadline = time.monotonic() + 30
    while location.read()[2] < start + count:
        assert time.monotonic() < deadline
    return location.read()


try:
    namespace["down"](0, lambda: location.read()[1] != 0)
except RuntimeError:
    name, line, _, _, running = samples_later(3)  # fxlens's code handling the error: no line of the file runs
    print(name, line, running)
name, line, _, _, running = samples_later(3)  # nothing handled any more, nothing of the file running
print(name, line, running)
location.at_class("Next")  # a new class forgets the line
print(*location.read()[:2])
"""


def test_the_child_location_keeps_the_line_that_raised_while_fxlens_handles_the_error_and_after():
    # the sampling thread never stops: it runs in a process of its own
    done = subprocess.run(
        [sys.executable, "-c", _LOCATION_WHILE_HANDLING],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SERVER)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["Deep 3 raised", "Deep 3 after", "Next 0"], done.stdout

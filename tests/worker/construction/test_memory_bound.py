"""The memory bound on guesses (`fxlens.guessMemoryMB`, `--guess-memory`, default 512 MB): a class whose
zero-config build would allocate gigabytes ends as a clear `memory` finding, at the line that allocates,
without the memory; real CPU tensors for a meta module are made only when they fit; a class within the bound
traces as raw torch does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from fxlens_command import ROOT
from torch_reference import analyse, expected, reported

FIXTURES = ROOT / "tests" / "fixtures" / "memory"
TABLES = FIXTURES / "positional_tables.py"
ROTARY = FIXTURES / "cached_rotary.py"

# `fxlens check` in a process of its own that reports the peak resident memory of everything it ran (the
# CLI, the worker, its trace children): what a user's machine would have had to give
_MEASURED = """
import json, resource, subprocess, sys
run = subprocess.run([sys.executable, "-m", "fxlens", *sys.argv[1:]], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
print(json.dumps({"stdout": run.stdout, "stderr": run.stderr, "peak_mb": peak}))
"""


def _check_measured(*args: str) -> tuple[dict, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURED, "check", "--no-cache", "--format", "json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout)
    return json.loads(result["stdout"]), result["peak_mb"]


@pytest.fixture(scope="module")
def checked():
    return _check_measured(str(TABLES), str(ROTARY))


def _of(found: dict, name: str) -> list[dict]:
    return [d for d in found["diagnostics"] if d["class_name"] == name]


def test_a_table_of_gigabytes_ends_as_a_memory_finding_without_the_memory(checked):
    found, peak_mb = checked
    assert not [d for d in found["diagnostics"] if d["category"] == "internal"]
    (memory,) = _of(found, "LongPositions")
    assert memory["category"] == "memory" and memory["severity"] == "error"
    assert memory["message"].startswith(
        "building LongPositions without a directive would pass the 512 MB of real memory fxlens may spend on "
        "a guess (`fxlens.guessMemoryMB`): it tried to allocate more (MemoryError: Unable to allocate 2.00 GiB"
    )
    assert memory["line"] == 11  # the NumPy line that allocates, inside the file's own function
    assert "guessMemoryMB" in memory["fix"] and "# fxlens: LongPositions(" in memory["fix"]
    # the table alone is 2 GB (and its float32 copy 1 GB more); the worker with torch is about 300 MB
    assert peak_mb < 1024, peak_mb


def test_real_cpu_tensors_past_the_bound_are_never_made(checked):
    found, _ = checked
    aten = next(d for d in _of(found, "CachedRotary") if d["level"] == "aten")
    assert aten["category"] == "meta-device"
    assert (
        "real CPU tensors would pass the 512 MB of real memory fxlens may spend on a guess "
        "(`fxlens.guessMemoryMB`): its tensors would take 1,024 MB of real memory" in aten["message"]
    )


@pytest.fixture(scope="module")
def within():
    return analyse([TABLES], classes=["ShortPositions"])[TABLES.stem]


@pytest.mark.parametrize("level", ["fx", "aten"])
def test_a_table_within_the_bound_is_built_and_traces_like_raw_torch(within, level):
    short = within.find_class("ShortPositions")
    assert short.build.how == "guessed" and short.levels[level].ok
    ours, torchs = reported(short, level), expected(TABLES, within, short, level)
    if level == "fx":  # (raw ShapeProp cannot add the table NumPy made on the CPU to a meta input: no shapes)
        ours, torchs = [node[:5] for node in ours], [node[:5] for node in torchs]
    assert ours == torchs


def test_the_bound_is_a_setting():
    report = analyse([TABLES], classes=["ShortPositions"], levels=("fx",), guess_memory_mb=16)[TABLES.stem]
    (memory,) = [d for d in report.all_diagnostics() if d.class_name == "ShortPositions" and d.category != "guessed"]
    assert memory.category == "memory"
    assert "would pass the 16 MB of real memory" in memory.message and "Unable to allocate 32.0 MiB" in memory.message


def test_the_trace_memory_limit_bounds_a_guess_when_less_of_it_is_left():
    # the trace's limit (`fxlens.memoryLimitMB`, its least: 256 MB on top of the worker) leaves less than the
    # guess bound of 512 MB: what it leaves is the bound, and the finding names the setting to raise
    report = analyse([TABLES], classes=["LongPositions"], levels=("fx",), memory_mb=256)[TABLES.stem]
    (memory,) = [d for d in report.all_diagnostics() if d.class_name == "LongPositions" and d.category != "guessed"]
    assert memory.category == "memory" and memory.line == 11, memory
    left = re.search(r"would pass the (\d+) MB of real memory left under the trace's memory limit", memory.message)
    assert left and 0 < int(left.group(1)) <= 256, memory.message
    assert "fxlens.memoryLimitMB" in memory.fix and "guessMemoryMB" not in memory.message + memory.fix

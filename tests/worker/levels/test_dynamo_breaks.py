"""Graph breaks explain's own counts miss: a break before any tensor op has no compiled graph to carry its
reason, so `break_reasons` is empty while torch.compile(fullgraph=True) refuses the module at that line.
Compared with explain and with fullgraph=True run directly on the same modules."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.render.lens import level_title

ROOT = Path(__file__).resolve().parents[3]
SHAPES_FILE = ROOT / "tests" / "fixtures" / "dynamo" / "break_shapes.py"
SHAPES = {"PrintsFirst": [2, 3], "ListsFirst": [2, 3], "BreaksLast": [2, 3], "BreaksTwice": [2, 3], "Stack": [2, 8]}


@pytest.fixture(scope="module")
def report():
    async def go():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(SHAPES_FILE), SHAPES_FILE.read_text(), TraceOptions(levels=("dynamo",)))
        finally:
            await client.stop()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def raw():
    run = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "raw_dynamo.py"), str(SHAPES_FILE), json.dumps(SHAPES)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _line(text: str) -> int:
    return next(i for i, line in enumerate(SHAPES_FILE.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("name", ["PrintsFirst", "ListsFirst"])
def test_a_break_before_any_graph_is_reported_where_fullgraph_refuses(report, raw, name):
    result = report.find_class(name).levels["dynamo"]
    assert raw[name]["breaks"] == 0  # explain's break_reasons miss it
    line, col, gb_type = raw[name]["fullgraph"]
    [found] = result.diagnostics
    assert (found.line, found.col, found.category) == (line, col, "graph-break")
    assert gb_type in found.message and found.gb_id and found.hints
    assert (result.graphs, result.breaks) == (raw[name]["graphs"], 1)
    assert level_title("dynamo", result) == "dynamo: 1 graph, 1 break"  # not "fullgraph ok"


@pytest.mark.parametrize("name", ["BreaksLast", "BreaksTwice"])
def test_breaks_after_a_graph_count_as_explain_counts_them(report, raw, name):
    result = report.find_class(name).levels["dynamo"]
    assert (result.graphs, result.breaks) == (raw[name]["graphs"], raw[name]["breaks"])
    assert sorted((d.line, d.col) for d in result.diagnostics) == sorted(map(tuple, raw[name]["at"]))
    assert tuple(raw[name]["fullgraph"][:2]) in {(d.line, d.col) for d in result.diagnostics}


def test_a_child_that_breaks_first_used_three_times_is_one_warning_times_three(report, raw):
    result = report.find_class("Stack").levels["dynamo"]
    [found] = result.diagnostics
    line, col, gb_type = raw["Stack"]["fullgraph"]
    assert (found.line, found.col) == (line, col) == (_line('print("block", x.shape)'), 8)
    assert "×3" in found.message and gb_type in found.message
    assert result.breaks == 3 and result.graphs == raw["Stack"]["graphs"]
    # the child traced on its own breaks once
    [alone] = report.find_class("Logged").levels["dynamo"].diagnostics
    assert (alone.line, alone.col) == (line, col) and "×" not in alone.message

"""The proven fixes through `fxlens mcp` (issues 42 and 43), with the MCP SDK's stdio client: `fixes` lists the
rewrites `fxlens check --diff` shows, with their proofs, and says why a finding has none; `apply_fix` writes
one; applying every proven fix leaves the file `fxlens check --fix` leaves, and the fixed classes trace."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.fx
from background_run import BackgroundRun
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
GATES = ROOT / "tests" / "fixtures" / "fixes" / "gates.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


async def _session(project: Path) -> dict[str, Any]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "fxlens", "mcp", "--root", str(project)], env=ENV, cwd=str(project)
    )
    found: dict[str, Any] = {"applied": []}
    async with Client(server, read_timeout_seconds=300) as client:
        first = await client.call_tool("fixes", {"path": "gates.py"})
        found["first"] = first
        unproven = next(f["id"] for f in first.structured_content["fixes"] if not f["proven"])
        found["unproven"] = await client.call_tool("apply_fix", {"path": "gates.py", "id": unproven})
        found["unknown"] = await client.call_tool("apply_fix", {"path": "gates.py", "id": "torch-where:Nope:1:0"})
        # apply one proven fix at a time, as an agent would, asking again after each (the lines move)
        while True:
            listed = (await client.call_tool("fixes", {"path": "gates.py"})).structured_content
            proven = [f for f in listed["fixes"] if f["proven"]]
            if not proven:
                break
            result = await client.call_tool("apply_fix", {"path": "gates.py", "id": proven[0]["id"]})
            assert not result.is_error, result.content
            found["applied"].append(result.structured_content)
        found["stale"] = await client.call_tool(
            "apply_fix", {"path": "gates.py", "id": found["applied"][0]["id"]}
        )  # already applied: its finding is gone
        found["last"] = listed
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ours, theirs, diffed = (tmp_path_factory.mktemp(name) for name in ("mcp", "cli", "diff"))
    for folder in (ours, theirs, diffed):
        shutil.copy(GATES, folder / "gates.py")
    command = [sys.executable, "-m", "fxlens", "check", "--no-cache"]
    fixed = BackgroundRun([*command, "--fix", str(theirs / "gates.py")], theirs, timeout=600, env=ENV)
    diff = BackgroundRun([*command, "--diff", str(diffed / "gates.py")], diffed, timeout=600, env=ENV)
    try:
        found = asyncio.run(_session(ours))
        for run in (fixed, diff):
            run.process.wait(timeout=run.timeout)  # (exit 1: findings left, fixes shown)
        found["ours"] = (ours / "gates.py").read_text()
        found["theirs"] = (theirs / "gates.py").read_text()
        found["cli_diff"] = diff.stdout.read_text()
        return found
    finally:
        fixed.stop()
        diff.stop()


def _changed(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_fixes_lists_the_proven_rewrites_of_check_diff_with_their_proofs(runs):
    first = runs["first"]
    assert not first.is_error, first.content
    fixes = first.structured_content["fixes"]
    proven = [f for f in fixes if f["proven"]]
    assert first.structured_content["proven"] == len(proven) == 2
    assert [(f["rule"], f["class_name"], f["line"]) for f in proven] == [
        ("torch-where", "ResidualGate", 17),
        ("builtin-op", "FloorScale", 34),
    ]
    for fix in proven:
        assert fix["proof"]["outputs"] == "equal" and fix["proof"]["inputs"] == 3 and fix["proof"]["state_equal"]
        assert all(c["after"] < c["before"] for c in fix["proof"]["levels"])
        assert fix["label"].startswith(fix["title"] + " — ") and fix["id"] in first.content[0].text
    # each proven fix's own diff: together, the lines `fxlens check --diff` changes
    assert [line for f in proven for line in _changed(f["diff"])] == _changed(runs["cli_diff"])
    (refused,) = [f for f in fixes if not f["proven"]]
    assert refused["class_name"] == "CountingGate" and "changes module state (`self.opened`)" in refused["why_not"]


def test_apply_fix_refuses_what_is_not_proven_or_not_there(runs):
    assert (
        runs["unproven"].is_error
        and "is not offered: a branch changes module state" in runs["unproven"].content[0].text
    )
    assert runs["unknown"].is_error and "no fix 'torch-where:Nope:1:0'" in runs["unknown"].content[0].text
    assert runs["stale"].is_error and "call fixes again" in runs["stale"].content[0].text


def test_every_proven_fix_applied_leaves_the_file_check_fix_leaves(runs):
    assert [a["id"].split(":")[:2] for a in runs["applied"]] == [
        ["torch-where", "ResidualGate"],
        ["builtin-op", "FloorScale"],
    ]
    assert runs["ours"] == runs["theirs"] != GATES.read_text()
    assert [f["class_name"] for f in runs["last"]["fixes"]] == ["CountingGate"]  # nothing proven left
    namespace: dict = {}
    exec(compile(runs["ours"], "gates.py", "exec"), namespace)
    torch.fx.symbolic_trace(namespace["ResidualGate"]())  # the original raises TraceError
    torch.fx.symbolic_trace(namespace["FloorScale"]())

"""`fxlens mcp` meets hostile code (issue 43), through the MCP SDK's stdio client: a model that hangs, one that
crashes the trace process, one that kills the worker; paths outside the workspace roots; execution off. Each is
a tool error that names the line, the next call on a good file answers, and once the client closes, no process
the server started is left (every one carries the session's token in its environment).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from hostile_support import TOKEN_VARIABLE, fixture_text, hostile_line, wait_until_gone
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 3  # fxlens mcp --timeout: what a hang costs


def _server(root: Path, token: str, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "fxlens", "mcp", "--root", str(root), "--timeout", str(TIMEOUT), *flags],
        env={"PYTHONPATH": str(ROOT / "server"), TOKEN_VARIABLE: token},
        cwd=str(root),
    )


async def _calls(server: StdioServerParameters, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    answers = {}
    async with Client(server, read_timeout_seconds=120) as client:
        for key, tool, arguments in calls:
            answers[key] = await client.call_tool(tool, arguments)
    return answers


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workspace = tmp_path_factory.mktemp("workspace")
    for name in ("sleep_forward.py", "segfault.py", "kill_parent.py", "kill_parent_shell.py", "good.py"):
        (workspace / name).write_text(fixture_text(name))
    outside = tmp_path_factory.mktemp("outside")
    (outside / "good.py").write_text(fixture_text("good.py"))
    (workspace / "link.py").symlink_to(outside / "good.py")  # a link inside the root to a file outside it
    token = uuid.uuid4().hex
    calls = [
        ("hang", "graph", {"path": "sleep_forward.py", "class_name": "Sleepy"}),
        ("after_hang", "list_modules", {"path": "good.py"}),
        ("crash", "list_modules", {"path": "segfault.py"}),
        ("crash_findings", "findings", {"path": "segfault.py"}),
        ("after_crash", "graph", {"path": "good.py", "class_name": "Good", "level": "aten"}),
        ("killer", "list_modules", {"path": "kill_parent.py"}),
        ("after_killer", "findings", {"path": "good.py"}),
        ("worker_killed", "list_modules", {"path": "kill_parent_shell.py"}),
        ("after_worker_killed", "graph", {"path": "good.py", "class_name": "Good"}),
        ("held", "list_modules", {"path": "kill_parent_shell.py"}),
        ("outside", "list_modules", {"path": str(outside / "good.py")}),
        ("dotdot", "list_modules", {"path": f"../{outside.name}/good.py"}),
        ("link", "list_modules", {"path": "link.py"}),
        ("inside", "list_modules", {"path": str(workspace / "good.py")}),
    ]
    answers = asyncio.run(_calls(_server(workspace, token), calls))
    answers["left"] = wait_until_gone(token, None)
    return answers


def test_a_hanging_model_is_a_tool_error_at_its_line_and_the_server_answers_the_next_call(hostile):
    hang = hostile["hang"]
    assert hang.is_error
    assert f"(timeout) at line {hostile_line(fixture_text('sleep_forward.py'))}:" in _text(hang)
    assert "Sleepy" in _text(hang) and "fix:" in _text(hang)
    good = hostile["after_hang"].structured_content
    assert [(c["name"], [s["node_count"] for s in c["levels"]]) for c in good["classes"]] == [("Good", [5, 7])]


def test_a_crashing_model_is_a_tool_error_at_its_line(hostile):
    line = hostile_line(fixture_text("segfault.py"))
    crash = hostile["crash"]
    assert crash.is_error and f"(crash) at line {line}:" in _text(crash) and "SIGSEGV" in _text(crash)
    # findings is an error too, and still carries what was found: the crash at its line
    findings = hostile["crash_findings"]
    assert findings.is_error and f"line {line}" in _text(findings)
    assert [(f["line"], f["category"]) for f in findings.structured_content["findings"]] == [(line, "crash")]
    after = hostile["after_crash"]
    assert not after.is_error and after.structured_content["node_count"] == 7


def test_a_model_that_would_kill_the_worker_fails_at_its_line_and_the_worker_lives_on(hostile):
    # the trace child refuses to kill its parent: the class fails at that line, an answer, not a dead server
    killer = hostile["killer"]
    assert not killer.is_error, _text(killer)
    (cls,) = killer.structured_content["classes"]
    fx = cls["levels"][0]
    line = hostile_line(fixture_text("kill_parent.py"))
    assert not fx["ok"] and fx["failure"].startswith(f"line {line}: PermissionError") and "os.kill" in fx["failure"]
    after = hostile["after_killer"]
    assert not after.is_error and after.structured_content["errors"] == 0


def test_a_model_that_kills_the_worker_is_an_error_and_a_new_worker_answers_the_next_call(hostile):
    # the server traces it once more after the first death, as the editor does; the second holds it back
    killed = hostile["worker_killed"]
    assert killed.is_error and "(crash) at line 1: fxlens stopped tracing this file" in _text(killed), _text(killed)
    assert "killed fxlens's worker process 2 times" in _text(killed)
    after = hostile["after_worker_killed"]
    assert not after.is_error and after.structured_content["node_count"] == 5
    # held back (the engine's quarantine): the same error, no third death
    assert hostile["held"].is_error and _text(hostile["held"]) == _text(killed)


def test_paths_outside_the_root_are_refused_links_and_dotdot_too(hostile):
    for key in ("outside", "dotdot", "link"):
        assert hostile[key].is_error and "outside the workspace roots" in _text(hostile[key]), key
    assert not hostile["inside"].is_error


def test_no_process_is_left_once_the_client_closes(hostile):
    assert hostile["left"] == []


def test_execution_off_traces_nothing_and_says_so(tmp_path):
    marker = tmp_path / "marker"
    (tmp_path / "model.py").write_text(fixture_text("execution_off.py", ASSIGN=str(marker)))
    server = _server(tmp_path, uuid.uuid4().hex, "--execution", "off")
    answers = asyncio.run(_calls(server, [("off", "list_modules", {"path": "model.py"})]))
    listed = answers["off"].structured_content
    assert [c["name"] for c in listed["classes"]] == ["Block", "Deeper", "Bare"]
    assert all(not s["ok"] and "execution" in s["failure"] for c in listed["classes"] for s in c["levels"])
    assert not marker.exists() and os.listdir(tmp_path) == ["model.py"]


HELPER = "import torch\nfrom torch import nn\n\n\ndef block():\n    return nn.Sequential({layers})\n"
MODEL = """import torch
from torch import nn

from helper import block


# fxlens: Model()(torch.randn(2, 4))
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = block()

    def forward(self, x):
        return self.body(x)
"""


def test_an_edit_of_a_module_the_file_imports_is_traced_again(tmp_path):
    """The server keeps the reports of unchanged files: one whose imported helper changed is not unchanged."""
    (tmp_path / "model.py").write_text(MODEL)
    helper = tmp_path / "helper.py"

    async def go() -> list[int]:
        counts = []
        async with Client(_server(tmp_path, uuid.uuid4().hex), read_timeout_seconds=120) as client:
            for layers in ("nn.Linear(4, 4)", "nn.Linear(4, 4), nn.ReLU()", "nn.Linear(4, 4), nn.ReLU()"):
                helper.write_text(HELPER.format(layers=layers))
                result = await client.call_tool("graph", {"path": "model.py", "class_name": "Model", "level": "aten"})
                counts.append(result.structured_content["node_count"])
        return counts

    one, two, again = asyncio.run(go())
    assert two == one + 1 and again == two  # the ReLU's node; the same files, the same answer


def test_an_interpreter_that_cannot_run_is_an_error_on_every_call_and_the_server_answers(tmp_path):
    (tmp_path / "good.py").write_text(fixture_text("good.py"))
    server = _server(tmp_path, uuid.uuid4().hex, "--python", str(tmp_path / "no-such-python"))
    calls = [(f"call{n}", "list_modules", {"path": "good.py"}) for n in range(2)]
    answers = asyncio.run(_calls(server, calls))
    for result in answers.values():
        assert result.is_error and "cannot run the interpreter" in _text(result) and "no-such-python" in _text(result)
        assert "fxlens mcp --python" in _text(result)

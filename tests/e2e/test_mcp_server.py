"""`fxlens mcp` through the MCP SDK's own client over stdio (issue 43): the client starts the server as an
agent does, lists the tools and calls them on our corpus; the answers agree with `fxlens graph --json` and
`fxlens check --format json` run on the same files (same classes, node counts, nodes, lines, findings).

One client session answers every call (a module fixture, so the server's worker imports torch once); the CLI
runs are started before it, in the background, and read after it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from background_run import BackgroundRun
from fxlens.report import LEVELS
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
CORPUS = (
    "examples/residual_mlp.py",
    "tests/fixtures/lsp/two_models.py",
    "tests/fixtures/models/failures.py",
    "tests/fixtures/models/tiny_gpt.py",
)
BIG = "tests/fixtures/models/tiny_gpt.py"  # a graph larger than one page of PAGE nodes
PAGE = 40
TOOLS = {"list_modules", "graph", "findings", "run_pass", "kernels", "fixes", "apply_fix"}
PASSES = ("relu-to-clamp", "relu_to_sigmoid")  # a built-in that keeps results, the file's own that changes them
PASS_FILE = "tests/fixtures/passes/tinynet.py"
KERNEL_FILE = "tests/fixtures/lsp/kernels.py"


def _server() -> StdioServerParameters:
    return StdioServerParameters(
        # (the SDK hands a server only a few variables of its own environment: the tests' cache folders are named)
        command=sys.executable,
        args=["-m", "fxlens", "mcp"],
        env=ENV,
        cwd=str(ROOT),
    )


async def _all_pages(client: Client, path: str, cls: str, level: str) -> dict[str, Any]:
    """Every page of one graph, joined; the first page's answer with all the nodes."""
    first: dict[str, Any] | None = None
    nodes: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        result = await client.call_tool(
            "graph", {"path": path, "class_name": cls, "level": level, "offset": offset, "limit": PAGE}
        )
        assert not result.is_error, result.content
        page = result.structured_content
        assert page is not None
        first = first or {**page, "text": result.content[0].text}
        nodes += page["nodes"]
        offset = page["next_offset"]
    assert first is not None
    return {**first, "nodes": nodes}


async def _session() -> dict[str, Any]:
    found: dict[str, Any] = {"modules": {}, "graphs": {}, "findings": {}, "errors": {}, "passes": {}}
    async with Client(_server(), read_timeout_seconds=300) as client:
        found["tools"] = (await client.list_tools()).tools
        for path in CORPUS:
            listed = await client.call_tool("list_modules", {"path": path})
            assert not listed.is_error, listed.content
            found["modules"][path] = listed.structured_content
            for cls in listed.structured_content["classes"]:
                for summary in cls["levels"]:
                    if summary["ok"]:
                        key = (path, cls["name"], summary["level"])
                        found["graphs"][key] = await _all_pages(client, *key)
            result = await client.call_tool("findings", {"path": path})
            found["findings"][path] = (result.is_error, result.structured_content, result.content[0].text)
        for name, call in {
            "outside": ("findings", {"path": "/etc/hostname"}),
            "escape": ("list_modules", {"path": "../../etc/hostname"}),
            "missing": ("list_modules", {"path": "no/such/file.py"}),
            "class": ("graph", {"path": CORPUS[0], "class_name": "Nope"}),
            "pass": ("run_pass", {"path": PASS_FILE, "class_name": "TinyNet", "pass_name": "no-such-pass"}),
            "untraceable": ("graph", {"path": "tests/fixtures/models/failures.py", "class_name": "DataDependentIf"}),
        }.items():
            result = await client.call_tool(*call)
            found["errors"][name] = (result.is_error, result.content[0].text)
        for name in PASSES:
            result = await client.call_tool("run_pass", {"path": PASS_FILE, "class_name": "TinyNet", "pass_name": name})
            found["passes"][name] = (result.is_error, result.structured_content, result.content[0].text)
        result = await client.call_tool("kernels", {"path": KERNEL_FILE, "class_name": "Gate"})
        found["kernels"] = (result.is_error, result.structured_content, result.content[0].text)
        # the server lives on after every refusal
        again = await client.call_tool("list_modules", {"path": CORPUS[1]})
        found["after_errors"] = again.structured_content
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    background = {}
    for index, path in enumerate(CORPUS):
        folder = tmp_path_factory.mktemp(f"graph{index}")
        command = [sys.executable, "-m", "fxlens", "graph", "--json", str(ROOT / path)]
        background[path] = BackgroundRun(command, folder, timeout=600, env=ENV)
    check_folder = tmp_path_factory.mktemp("check")
    check = [sys.executable, "-m", "fxlens", "check", "--format", "json", "--no-cache", "-j", "1", *CORPUS]
    checked = BackgroundRun(check, check_folder, timeout=600, env=ENV)
    others = {}
    for name in PASSES:
        command = [sys.executable, "-m", "fxlens", "pass", PASS_FILE, "--class", "TinyNet", "--pass", name, "--json"]
        others[name] = BackgroundRun(command, tmp_path_factory.mktemp("pass"), timeout=600, env=ENV)
    command = [sys.executable, "-m", "fxlens", "graph", KERNEL_FILE, "--class", "Gate", "--level", "inductor", "--json"]
    others["inductor"] = BackgroundRun(command, tmp_path_factory.mktemp("inductor"), timeout=600, env=ENV)
    try:
        found = asyncio.run(_session())
        graphs = {}
        for path, run in background.items():
            run.process.wait(timeout=run.timeout)  # (exit 1 when a level failed: failures.py's do)
            graphs[path] = json.loads(run.stdout.read_text())
        checked.process.wait(timeout=checked.timeout)
        found["cli_graph"] = graphs
        found["cli_check"] = json.loads(checked.stdout.read_text())
        for name, run in others.items():
            run.process.wait(timeout=run.timeout)  # (`fxlens pass` exits 1 on a pass that changes results)
            found[f"cli_{name}"] = json.loads(run.stdout.read_text())
        return found
    finally:
        for run in [*background.values(), checked, *others.values()]:
            run.stop()


def test_the_client_lists_the_tools_with_input_and_output_schemas(runs):
    tools = {tool.name: tool for tool in runs["tools"]}
    assert TOOLS <= set(tools)
    graph = tools["graph"]
    assert set(graph.input_schema["required"]) == {"path", "class_name"}
    assert graph.input_schema["properties"]["level"]["enum"] == list(LEVELS)
    assert "node_count" in graph.output_schema["properties"]
    for tool in tools.values():
        assert tool.description and tool.output_schema is not None


def _cli_levels(objects: Any) -> list[dict[str, Any]]:
    return objects if isinstance(objects, list) else [objects]


def test_list_modules_gives_the_classes_lines_and_node_counts_of_fxlens_graph(runs):
    for path in CORPUS:
        cli = _cli_levels(runs["cli_graph"][path])
        listed = runs["modules"][path]
        assert listed["path"] == str(ROOT / path)
        expected = {(o["class"], o["level"]): (o["ok"], len(o["nodes"])) for o in cli}
        got = {(c["name"], s["level"]): (s["ok"], s["node_count"]) for c in listed["classes"] for s in c["levels"]}
        assert got == expected, path
        assert all(c["line"] > 0 and c["end_line"] >= c["line"] for c in listed["classes"])
    residual = {c["name"]: c for c in runs["modules"]["examples/residual_mlp.py"]["classes"]}
    # the directive says how the top class is built; its child is built by it
    assert residual["ResidualMLP"]["built"] == "directive" and residual["ResidualMLP"]["line"] == 18
    assert residual["ResidualMLP"]["directive"] == "ResidualMLP(width=16, depth=2)(torch.randn(4, 8))"
    assert residual["Residual"]["built"] == "parent" and residual["Residual"]["line"] == 6


def test_graph_pages_join_into_the_nodes_of_fxlens_graph(runs):
    assert runs["graphs"], "no graph was fetched"
    for (path, cls, level), answer in runs["graphs"].items():
        cli = next(o for o in _cli_levels(runs["cli_graph"][path]) if (o["class"], o["level"]) == (cls, level))
        assert answer["node_count"] == len(cli["nodes"]) == len(answer["nodes"])
        assert [n["index"] for n in answer["nodes"]] == list(range(answer["node_count"]))
        for ours, theirs in zip(answer["nodes"], cli["nodes"]):
            assert (ours["name"], ours["op"], ours["target"], ours["overload"]) == (
                theirs["name"],
                theirs["op"],
                theirs["target"],
                theirs["overload"],
            )
            assert (ours["shape"], ours["dtype"], ours["users"], ours["line"]) == (
                theirs["shape"],
                theirs["dtype"],
                theirs["users"],
                theirs["line"],
            )
            # the report's 0-based byte column, as a 1-based character column (our corpus is ASCII)
            assert ours["column"] == (None if theirs["col"] is None else theirs["col"] + 1)
            assert ours["module"] == theirs["scope"]


def test_a_graph_larger_than_a_page_is_paged_with_counts_per_submodule(runs):
    big = [a for (path, _, _), a in runs["graphs"].items() if path == BIG and a["node_count"] > PAGE]
    assert big, f"{BIG} has no graph over {PAGE} nodes"
    for answer in big:
        assert answer["next_offset"] == PAGE and "offset=40" in answer["text"]
        counts = answer["modules"]
        assert sum(m["node_count"] for m in counts) == answer["node_count"]
        by_module: dict[str, int] = {}
        for node in answer["nodes"]:
            by_module[node["module"]] = by_module.get(node["module"], 0) + 1
        assert {m["module"]: m["node_count"] for m in counts} == by_module


def test_findings_are_the_findings_of_fxlens_check(runs):
    expected: dict[str, list[tuple[Any, ...]]] = {path: [] for path in CORPUS}
    for d in runs["cli_check"]["diagnostics"]:
        key = (d["line"], d["col"] + 1, d["severity"], d["category"], d["message"], d["fix"], d["levels"])
        expected[d["path"]].append(key)
    assert sum(map(len, expected.values())) >= 7  # failures.py's six errors, the example's hint
    for path in CORPUS:
        is_error, result, text = runs["findings"][path]
        assert not is_error, text
        got = [
            (f["line"], f["column"], f["severity"], f["category"], f["message"], f["fix"], f["levels"])
            for f in result["findings"]
        ]
        assert got == expected[path], path
        assert result["errors"] == sum(f["severity"] == "error" for f in result["findings"])
    failures = runs["findings"]["tests/fixtures/models/failures.py"]
    assert failures[1]["errors"] == 6 and "line 14:12 error [data-dependent-control-flow]" in failures[2]
    assert all(f["explanation"] and f["fix"] for f in failures[1]["findings"])


def test_paths_outside_the_roots_missing_files_and_classes_are_errors_the_server_lives_through(runs):
    errors = runs["errors"]
    assert all(is_error for is_error, _ in errors.values())
    assert "outside the workspace roots" in errors["outside"][1] and str(ROOT) in errors["outside"][1]
    assert "outside the workspace roots" in errors["escape"][1]
    assert "no such file" in errors["missing"][1]
    assert "no Module class 'Nope'" in errors["class"][1] and "ResidualMLP" in errors["class"][1]
    # a level torch cannot trace: the error names the line
    assert "line 14" in errors["untraceable"][1] and "could not be traced" in errors["untraceable"][1]
    assert [c["name"] for c in runs["after_errors"]["classes"]] == ["Encoder", "Head"]


def test_the_mcp_server_never_imports_torch():
    code = "import sys, fxlens.cli.mcp_cmd, fxlens.mcp_server.server; print('torch' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_run_pass_gives_the_counts_changes_and_verdict_of_fxlens_pass(runs):
    for name in PASSES:
        is_error, ours, text = runs["passes"][name]
        theirs = runs[f"cli_{name}"]
        assert not is_error, text
        assert (ours["counts_before"], ours["counts_after"]) == (theirs["counts_before"], theirs["counts_after"])
        assert ours["nodes_before"] == sum(theirs["counts_before"].values())
        assert ours["verdict"] == theirs["proof"]["verdict"] and ours["draws"] == theirs["proof"]["draws"]
        assert [(c["change"], c["name"], c["target"]) for c in ours["changes"]] == [
            (c["change"], c["name"], c["target"]) for c in theirs["changes"]
        ]
        assert ours["diff"] == theirs["diff"]
    assert runs["passes"]["relu-to-clamp"][1]["verdict"] == "equal"
    changed = runs["passes"]["relu_to_sigmoid"]
    assert changed[1]["verdict"] == "changes results" and "first difference" in changed[2]
    assert changed[1]["kind"] == "user" and changed[1]["changes"][0]["before"] == "call_function[torch.relu]"
    assert "no pass 'no-such-pass'" in runs["errors"]["pass"][1] and "relu-to-clamp" in runs["errors"]["pass"][1]


def test_kernels_are_the_inductor_levels_kernels_with_their_lines(runs):
    is_error, ours, text = runs["kernels"]
    assert not is_error, text
    theirs = [n for n in runs["cli_inductor"]["nodes"] if n["kernel"]]
    assert ours["kernel_count"] == len(theirs) == len(ours["kernels"]) > 0
    assert [(k["name"], k["kernel"], k["kind"], k["lines"], k["users"]) for k in ours["kernels"]] == [
        (n["name"], n["target"], n["kernel"]["kind"], n["kernel"]["lines"], n["users"]) for n in theirs
    ]
    # the file's forward runs from line 13 to 15: every kernel computes ops of those lines
    assert {line for k in ours["kernels"] for line in k["lines"]} <= {13, 14, 15}
    assert any(k["kind"] == "fused" and len(k["lines"]) > 1 for k in ours["kernels"]), "nothing fused two lines"

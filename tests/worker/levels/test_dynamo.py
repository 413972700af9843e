"""The dynamo level against torch itself: `torch._dynamo.explain` run directly on the same modules, and
the graph-break registry torch ships (`torch/_dynamo/graph_break_registry.json`)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from background_run import BackgroundRun
from fxlens.engine.worker_client import TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
BREAKS = ROOT / "tests" / "fixtures" / "dynamo" / "breaks.py"
SHAPES = {"Gate": [2, 3], "Scale": [2, 3], "Clean": [2, 3], "Twice": [2, 8]}
REGISTRY = json.loads((Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json").read_text())
FAILURES = ROOT / "tests" / "fixtures" / "models" / "failures.py"
# the constructs every tracer is measured on (FACTS: "How each tracer fails on untraceable code")
CONSTRUCTS = {
    "DataDependentIf": [4, 8],
    "LoopOverDim": [3, 8],
    "UsesItem": [3, 8],
    "UsesLen": [3, 8],
    "AssertsShape": [2, 8],
    "UsesNumpy": [2, 8],
    "Encoder": [2, 5, 16],
}
FREE = ROOT / "tests" / "fixtures" / "dynamo" / "free_sizes.py"
PARALLEL = ROOT / "tests" / "fixtures" / "dynamo" / "after_parallel.py"
# each file fxlens traces below, and its levels
TRACED = {
    "breaks": (BREAKS, ("dynamo",)),
    "failures": (FAILURES, ("dynamo",)),
    "free_sizes": (FREE, ("fx", "dynamo")),
    "after_parallel": (PARALLEL, ("fx", "aten", "dynamo")),
}


@pytest.fixture(scope="module")
def raw_runs(tmp_path_factory):
    """torch._dynamo.explain run directly on BREAKS's and on FAILURES's classes, each in a fresh interpreter
    (a clean dynamo state); started before fxlens's traces, beside which they run."""
    runs = {
        name: BackgroundRun(
            [sys.executable, str(ROOT / "tests" / "support" / "raw_dynamo.py"), str(path), json.dumps(shapes)],
            tmp_path_factory.mktemp(f"raw-dynamo-{name}"),
            timeout=300,
        )
        for name, path, shapes in (
            ("breaks", BREAKS, SHAPES),
            ("failures", FAILURES, CONSTRUCTS),
            ("after_parallel", PARALLEL, {"NormGate": [2, 16]}),
        )
    }
    yield runs
    for run in runs.values():
        run.stop()


@pytest.fixture(scope="module")
def reports(raw_runs):
    """fxlens's report of each TRACED file, from one worker (one interpreter's start, not one a file)."""

    async def go():
        client = WorkerClient()
        await client.start()
        try:
            return await asyncio.gather(
                *(
                    client.analyse(str(path), path.read_text(), TraceOptions(levels=levels))
                    for path, levels in TRACED.values()
                )
            )
        finally:
            await client.stop()

    return dict(zip(TRACED, asyncio.run(go()), strict=True))


@pytest.fixture(scope="module")
def report(reports):
    return reports["breaks"]


@pytest.fixture(scope="module")
def raw(raw_runs):
    return raw_runs["breaks"].json()


def _line(text: str) -> tuple[int, str]:
    lines = BREAKS.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if text in line)
    return number, lines[number - 1]


def _registered(gb_type: str) -> tuple[str, list[dict]]:
    return next(
        (gb_id, [v for v in variants if v["Gb_type"] == gb_type])
        for gb_id, variants in REGISTRY.items()
        if any(v["Gb_type"] == gb_type for v in variants)
    )


def test_a_data_dependent_branch_is_a_warning_at_its_expression_in_torchs_words(report):
    result = report.find_class("Gate").levels["dynamo"]
    assert result.ok
    [found] = result.diagnostics
    line, text = _line("if y.sum() > 0:")
    start = text.index("y.sum() > 0").__index__()
    assert (found.line, found.col, found.end_line, found.end_col) == (line, start, line, start + len("y.sum() > 0"))
    assert (found.severity, found.category, found.level) == ("warning", "graph-break", "dynamo")
    gb_id, variants = _registered("Data-dependent branching")
    assert found.gb_id == gb_id and "Data-dependent branching" in found.message
    assert "generic_jump" not in found.message + found.explanation  # dynamo's internal reason, not for people
    assert any(v["Explanation"] in found.explanation for v in variants)
    assert "Use `torch.cond` to express dynamic control flow." in found.hints
    assert found.fix and all(h in found.fix for h in found.hints)
    assert torch._dynamo.exc.get_gbid_documentation_link("Data-dependent branching") in found.explanation


def test_item_is_a_break_at_the_item_expression(report):
    [found] = report.find_class("Scale").levels["dynamo"].diagnostics
    line, text = _line("peak = y.abs().max().item()")
    expression = "y.abs().max().item()"
    assert (found.line, found.col, found.end_col) == (
        line,
        text.index(expression),
        text.index(expression) + len(expression),
    )
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id, variants = _registered(gb_type)
    assert found.gb_id == gb_id and gb_type in found.message
    assert variants[0]["Explanation"] in found.explanation
    assert any("capture_scalar_outputs = True" in hint for hint in found.hints)
    # the meta device cannot run `.item()`: the build says which tensors ran it, and why
    assert report.find_class("Scale").build.tensors == "cpu"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_graph_and_break_counts_equal_torchs_explain(report, raw, name):
    result = report.find_class(name).levels["dynamo"]
    assert (result.graphs, result.breaks) == (raw[name]["graphs"], raw[name]["breaks"])
    assert raw[name]["graph_break_count"] == raw[name]["breaks"]  # each break here is followed by a graph
    graphs = [[[n.op, n.target] for n in result.nodes if n.graph == index] for index in range(result.graphs)]
    assert graphs == raw[name]["nodes"]
    assert {(d.line, d.col) for d in result.diagnostics} == {tuple(at) for at in raw[name]["at"]}


def test_a_clean_module_is_one_graph_mapped_to_its_lines(report, raw):
    result = report.find_class("Clean").levels["dynamo"]
    assert (result.graphs, result.breaks, result.diagnostics) == (1, 0, [])
    line, _ = _line("h = self.norm(self.fc(x))")
    computed = [n for n in result.nodes if n.op not in ("placeholder", "output")]
    assert [(n.target, n.line, n.shape) for n in computed][:2] == [
        ("torch._C._nn.linear", line, [2, 4]),
        ("torch.nn.functional.layer_norm", line, [2, 4]),
    ]
    assert computed[-1].target == "sum" and computed[-1].shape == [2] and computed[-1].line == line + 1
    assert report.find_class("Clean").build.tensors == "meta"  # nothing read a value: no weights were made


def test_a_child_used_twice_breaks_once_said_twice(report, raw):
    result = report.find_class("Twice").levels["dynamo"]
    [found] = result.diagnostics
    line, _ = _line("if x.abs().amax() >= 0:")
    assert found.line == line and "×2" in found.message and raw["Twice"]["breaks"] == 2


def test_cli_graph_and_check_at_the_dynamo_level():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    # the two commands at once, a core each
    commands = {
        "graph": ["graph", str(BREAKS), "--class", "Gate", "--level", "dynamo", "--json"],
        "check": ["check", str(BREAKS), "--level", "dynamo"],
    }
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", "fxlens", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for name, args in commands.items()
    }
    outputs = {name: process.communicate(timeout=300) for name, process in running.items()}
    graph, check = (
        subprocess.CompletedProcess(process.args, process.returncode, *outputs[name])
        for name, process in running.items()
    )
    assert graph.returncode == 0, graph.stderr
    data = json.loads(graph.stdout)
    assert (data["class"], data["level"], data["ok"]) == ("Gate", "dynamo", True)
    [found] = data["diagnostics"]
    assert found["category"] == "graph-break" and found["gb_id"] == _registered("Data-dependent branching")[0]
    assert found["hints"] and found["line"] == _line("if y.sum() > 0:")[0]
    assert {n["graph"] for n in data["nodes"]} == {0, 1}
    assert check.returncode == 0, check.stdout + check.stderr  # breaks are warnings
    assert f"breaks.py:{_line('if y.sum() > 0:')[0]}:" in check.stdout and "graph break" in check.stdout


@pytest.fixture(scope="module")
def constructs(reports, raw_runs):
    return reports["failures"], raw_runs["failures"].json()


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_what_symbolic_trace_cannot_trace_breaks_where_explain_says(constructs, name):
    report, raw = constructs
    result = report.find_class(name).levels["dynamo"]
    assert result.ok and result.breaks == raw[name]["breaks"]
    assert sorted((d.line, d.col) for d in result.diagnostics) == sorted(map(tuple, raw[name]["at"]))
    assert all(d.gb_id for d in result.diagnostics)
    if name != "DataDependentIf":  # which side of its `if` runs (a graph, or none) depends on the input's values
        assert result.graphs == raw[name]["graphs"]


@pytest.fixture(scope="module")
def free_sizes(reports):
    return reports["free_sizes"]


def _computed(result) -> list:
    return [(n.target, n.shape) for n in result.nodes if n.op not in ("placeholder", "output")]


def test_free_sizes_are_named_at_the_dynamo_level_as_at_the_fx_level(free_sizes):
    cls = free_sizes.find_class("TokenMixer")
    dynamo, fx = cls.levels["dynamo"], cls.levels["fx"]
    assert dynamo.ok and dynamo.note == "" and cls.build.sizes == {"B": 2, "T": 8}
    assert [n.shape for n in dynamo.nodes if n.op == "placeholder" and not n.name.startswith("l_self")] == [["B", "T"]]
    assert (
        [shape for _, shape in _computed(dynamo)]
        == [shape for _, shape in _computed(fx)]
        == [["B", "T", 12], ["B", "T", 12], ["B*T", 12]]
    )
    # a lifted parameter keeps its own sizes
    assert next(n.shape for n in dynamo.nodes if n.name == "l_self_modules_emb_parameters_weight_") == [100, 12]


def test_the_graph_after_a_break_names_its_sizes_too(free_sizes):
    dynamo = free_sizes.find_class("ScaledByMean").levels["dynamo"]
    assert (dynamo.graphs, dynamo.breaks) == (2, 1)
    after = [(n.name, n.shape) for n in dynamo.nodes if n.graph == 1 and n.op != "output"]
    assert after == [("l_h_", ["B", 6]), ("repeat", ["B", 12]), ("mul", ["B", 12])]


def test_the_forked_runs_answer_after_the_trace_child_ran_kernels_in_parallel(reports, raw_runs):
    """NormGate's forward reads a value, so the dynamo level runs it on real CPU tensors (its LayerNorm in
    parallel, on OpenMP's threads) beside its forked runs on larger sizes and at two sizes. A forked process
    has none of those threads: its own first parallel kernel waited for them forever, and the trace timed out."""
    cls = reports["after_parallel"].find_class("NormGate")
    dynamo, raw = cls.levels["dynamo"], raw_runs["after_parallel"].json()["NormGate"]
    assert dynamo.ok and dynamo.note == "" and dynamo.breaks == raw["breaks"] == 1
    assert next(n.shape for n in dynamo.nodes if n.name == "l_x_") == ["B", 16]  # the scaled run answered
    assert dynamo.dynamic is not None and dynamo.dynamic.error == ""  # and the run at two sizes did

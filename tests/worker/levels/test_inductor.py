"""The inductor level against torch itself: `torch.compile(m)(x)` run directly, kernels built, with inductor's
debug trace on (tests/support/raw_inductor.py), on the lesson's Net, a transformer block and a forward split
by a graph break. fxlens's kernels, their fused ops and their lines must be what torch's own
`output_code.py` and `inductor_provenance_tracking_node_mappings.json` say.

Compiles cost seconds each (torch's kernels are built by g++): one fxlens trace and one raw run per fixture.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
from background_run import BackgroundRun
from fxlens.engine.worker_client import Listeners, TraceAsk, TraceOptions, WorkerClient
from fxlens.render.hover import hover_text
from fxlens.render.kernels import kernels as kernels_of
from fxlens.render.kernels import ranges
from fxlens.render.lens import class_lenses, level_title
from fxlens.report import Build, FileReport
from fxlens.worker.levels import inductor_cache
from fxlens.worker.levels.kernel_map import kernel_name

ROOT = Path(__file__).resolve().parents[3]
LADDER = ROOT / "tests" / "fixtures" / "models" / "ladder.py"
GPT = ROOT / "tests" / "fixtures" / "models" / "tiny_gpt.py"
BREAKS = ROOT / "tests" / "fixtures" / "inductor" / "breaks.py"
# class -> (file, how raw torch builds it, its input's shape: what fxlens built, see test_the_builds_match)
CASES = {
    "Net": (LADDER, "Net()", [2, 3]),
    "Block": (GPT, "Block(GPTConfig())", [2, 8, 32]),
    "Gated": (BREAKS, "Gated()", [2, 3]),
}
LEVELS = ("fx", "aten", "inductor")
HANDLE = re.compile(r"# \[Provenance debug handles\] (\S+)")
ORIGINS = re.compile(
    r"# Topologically Sorted Source Nodes: \[([^\]]*)\], Original ATen: \[([^\]]*)\]\n\s*"
    r"# \[Provenance debug handles\] (\S+)"
)


def _torch_folder() -> str:
    import torch

    return inductor_cache.folder(torch.__version__)


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    """torch.compile run directly in a fresh interpreter, kernels built as torch builds them, cached in a
    folder of the tests' own (kept between runs: built once per machine). Started before fxlens's traces (see
    `traced`), beside which it runs."""
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(tempfile.gettempdir(), f"fxlens-test-inductor-raw-{os.getuid()}"),
    }
    calls = {name: [str(path), expression, shape] for name, (path, expression, shape) in CASES.items()}
    command = [sys.executable, str(ROOT / "tests" / "support" / "raw_inductor.py"), json.dumps(calls)]
    run = BackgroundRun(command, tmp_path_factory.mktemp("raw-inductor"), timeout=900, env=env)
    yield run
    run.stop()


@pytest.fixture(scope="module")
def traced(raw_run):
    """fxlens's reports, and the order each trace's events arrived in (class events name their levels). One
    trace at a time: raw torch's run, started first, takes the other core."""

    async def go():
        client = WorkerClient()
        await client.start()
        reports, events = {}, {}
        try:
            for name, (path, _, _) in CASES.items():
                seen = events.setdefault(name, [])
                reports[name] = await client.submit(
                    str(path),
                    path.read_text(),
                    TraceOptions(levels=LEVELS),
                    TraceAsk(classes=[name]),
                    Listeners(
                        on_class=lambda cls, seen=seen: seen.append(sorted(cls.levels)),
                        on_stage=lambda levels, seen=seen: seen.append("stage"),
                    ),
                )
        finally:
            await client.stop()
        return reports, events

    return asyncio.run(go())


@pytest.fixture(scope="module")
def raw(raw_run):
    return raw_run.json()


def _level(traced, name):
    reports, _ = traced
    return reports[name].find_class(name).levels["inductor"]


def _key(node) -> str:
    """torch's name for the kernel ("name:handle"; fxlens adds "/gN" in graphs after the first)."""
    return node.name.split("/")[0]


def _graph_kernels(result, graph: int) -> list:
    return [n for n in kernels_of(result) if n.graph == graph]


def test_the_builds_match_the_raw_runs(traced):
    for name, (_, _, shape) in CASES.items():
        cls = traced[0][name].find_class(name)
        assert cls.build.inputs[0].shape in (shape, ["B", "T", 32]), cls.build
        assert cls.levels["inductor"].ok, cls.levels["inductor"].diagnostics


@pytest.mark.parametrize("name", CASES)
def test_each_graphs_kernels_and_their_fused_ops_are_torchs(traced, raw, name):
    result = _level(traced, name)
    assert result.graphs == len(raw[name])
    for graph, torch_graph in enumerate(raw[name]):
        ours = _graph_kernels(result, graph)
        # the kernels in the order the wrapper calls them, named as torch's provenance comments name them
        assert [_key(n) for n in ours] == HANDLE.findall(torch_graph["output_code"])
        # each kernel's post-grad nodes: torch's provenance mapping, kernel by kernel
        to_post = torch_graph["mappings"]["cppCodeToPost"]
        assert {_key(n): sorted(p["name"] for p in n.kernel["post"]) for n in ours} == {
            key: sorted(post) for key, post in to_post.items()
        }
        # torch's comment on a library call or fallback: its source nodes and original ATen ops
        for source, aten, key in ORIGINS.findall(torch_graph["output_code"]):
            node = next(n for n in ours if _key(n) == key)
            assert node.kernel["source_nodes"] == [s.strip() for s in source.split(",") if s.strip()]
            assert node.kernel["original_aten"] == [a.strip() for a in aten.split(",") if a.strip()]


@pytest.mark.parametrize("name", CASES)
def test_generated_kernel_code_is_the_code_torch_built(traced, raw, name):
    result = _level(traced, name)
    for graph, torch_graph in enumerate(raw[name]):
        for node in _graph_kernels(result, graph):
            assert node.kernel["code"] and node.kernel["code"] in torch_graph["output_code"], node.name
            code_lines = result.code.split("\n")
            start = node.kernel["code_line"]
            at = code_lines[start - 1]
            assert (
                at.startswith(f"{node.target} = async_compile.")
                if node.kernel["kind"] == "fused"
                else node.kernel["code"] in at
            )


@pytest.mark.parametrize("name", CASES)
def test_every_kernel_is_on_the_lines_torchs_mapping_gives(traced, raw, name):
    result = _level(traced, name)
    for graph, torch_graph in enumerate(raw[name]):
        to_post, to_pre = torch_graph["mappings"]["cppCodeToPost"], torch_graph["mappings"]["postToPre"]
        for node in _graph_kernels(result, graph):
            assert node.kernel["lines"], f"{node.name} maps to no line of {name}'s file"
            torchs = {
                torch_graph["pre_lines"].get(pre) for post in to_post[_key(node)] for pre in to_pre.get(post, [])
            } - {None}
            assert torchs <= set(node.kernel["lines"]), node.name
            if all(post in to_pre for post in to_post[_key(node)]):
                assert set(node.kernel["lines"]) == torchs, node.name


def test_the_lens_counts_the_kernels_of_torchs_output_code(traced, raw):
    for name in CASES:
        cls = traced[0][name].find_class(name)
        count = sum(len(HANDLE.findall(g["output_code"])) for g in raw[name])
        title = level_title("inductor", cls.levels["inductor"])
        assert re.match(rf"inductor: {count} kernels? \(", title), title
        lens = class_lenses(cls, LEVELS)[1].title
        assert f"inductor {count} kernel" in lens, lens
    assert level_title("inductor", _level(traced, "Net")) == "inductor: 2 kernels (1 fused, 1 extern)"
    assert "1 fallback" in level_title("inductor", _level(traced, "Block"))  # sdpa on the CPU


def test_the_hovers_fused_lines_are_torchs_mapping(traced, raw):
    """On the transformer block, every line of the class a kernel computes something of: the hover names that
    kernel and the other lines fused into it, as torch's mapping (kernel -> post-grad -> pre-grad -> line) has
    them."""
    report = traced[0]["Block"]
    cls = report.find_class("Block")
    torch_graph = raw["Block"][0]
    to_post, to_pre = torch_graph["mappings"]["cppCodeToPost"], torch_graph["mappings"]["postToPre"]
    torch_lines = {
        key: {torch_graph["pre_lines"].get(p) for post in posts for p in to_pre.get(post, [])} - {None}
        for key, posts in to_post.items()
    }
    checked = 0
    for key, lines in torch_lines.items():
        for line in sorted(lines):
            if not cls.line <= line <= cls.end_line:
                continue  # a child's line: the hover there is the child class's (its own inductor level)
            text = hover_text(FileReport(report.path, [cls]), line, 0, markdown=False)
            rows = [r.strip() for r in text.splitlines() if r.strip().startswith(kernel_name(key) + " ")]
            others = sorted(lines - {line})
            fused = f"fused with line{'s' if len(others) > 1 else ''} {ranges(others)}"
            assert any((fused in r) if others else ("fused with" not in r) for r in rows), (key, line, text)
            checked += 1
    assert checked >= 3


def test_a_graph_break_gives_each_compiled_graph_its_kernels(traced, raw):
    result = _level(traced, "Gated")
    assert result.graphs == 2 == len(raw["Gated"])
    assert [n.graph for n in kernels_of(result)] == [0, 1] and "graph breaks split the forward" in result.note
    assert level_title("inductor", result).endswith("in 2 graphs")
    assert result.code.startswith("# graph 0 of 2\n") and "\n# graph 1 of 2\n" in result.code


def test_the_level_comes_after_every_cheap_level(traced):
    _, events = traced
    for _name, seen in events.items():  # (each class event holds the levels received so far)
        stage = seen.index("stage")
        assert ["aten", "fx"] in seen[:stage] and not any("inductor" in e for e in seen[:stage]), seen
        assert any("inductor" in e for e in seen[stage:] if e != "stage"), seen


def test_inductor_writes_only_into_fxlens_private_folder(traced):
    folder = _torch_folder()
    leftovers = [os.path.join(parent, f) for parent, _, files in os.walk(folder) for f in files if f.endswith(".py")]
    assert leftovers == []  # every generated wrapper was read and removed: only the reused probes stay
    assert inductor_cache.size_of(folder) < inductor_cache.MAX_BYTES
    assert not (Path.cwd() / "torch_compile_debug").exists()


def _without_compiler(env: dict):
    async def go():
        with mock.patch.dict(os.environ, env):
            client = WorkerClient()
            await client.start()
        try:
            return await client.analyse(str(LADDER), LADDER.read_text(), TraceOptions(levels=LEVELS), classes=["Net"])
        finally:
            await client.stop()

    return asyncio.run(go())


@pytest.mark.parametrize(
    "env",
    [{"CXX": "/nonexistent/g++"}, {"PATH": "/nonexistent", "CXX": ""}],
    ids=["CXX-missing-binary", "PATH-without-g++"],
)
def test_no_cpp_compiler_is_a_diagnostic_not_a_crash(env):
    cls = _without_compiler(env).find_class("Net")
    assert cls.levels["fx"].ok and cls.levels["aten"].ok
    result = cls.levels["inductor"]
    assert not result.ok and [d.category for d in result.diagnostics] == ["compiler"]
    diagnostic = result.diagnostics[0]
    assert diagnostic.line == cls.line and diagnostic.severity == "error"
    assert "C++ compiler" in diagnostic.message and "g++" in diagnostic.fix
    if env["CXX"]:
        assert env["CXX"] in diagnostic.message


def _fresh_folder(tmp_path, monkeypatch) -> None:
    """A private folder of the test's own (no compile cached in it), inductor's CPU probes' answers copied."""
    import shutil

    probes = Path(_torch_folder()) / inductor_cache.PROBES
    monkeypatch.setenv(inductor_cache.ENV, str(tmp_path))
    os.makedirs(_torch_folder(), exist_ok=True)
    if probes.exists():
        shutil.copy(probes, Path(_torch_folder()) / inductor_cache.PROBES)


def test_a_compile_failure_is_a_diagnostic_at_the_line_torch_names(tmp_path, monkeypatch):
    """A lowering that raises (as a torch bug or an unsupported op would) fails the level at the node's line,
    which torch names in its message: the compile has no frame of the user's file in its traceback."""
    _fresh_folder(tmp_path, monkeypatch)  # (the graphs traced above are cached: they would not be compiled)
    import torch
    from fxlens import lines as line_model
    from fxlens.worker.failures.classify import whole_line
    from fxlens.worker.levels import inductor
    from fxlens.worker.load import loader
    from torch._inductor import lowering

    text = BREAKS.read_text()
    module = loader.load(str(BREAKS), text, "safe", loader.parse(str(BREAKS), text), [], {}).module
    lines = line_model.split(text)
    example = SimpleNamespace(
        instance=module.Gated(), inputs=(torch.randn(2, 3),), kwargs={}, build=Build(), rebuild=None
    )

    def refuse(*args, **kwargs):
        raise RuntimeError("no lowering for this op here")

    relu = next(i for i, t in enumerate(lines, 1) if "torch.relu" in t)
    with mock.patch.dict(lowering.lowerings, {torch.ops.aten.relu.default: refuse}):
        result = inductor.run(example, str(BREAKS), lines, whole_line(7, lines))
    assert not result.ok
    (diagnostic,) = result.diagnostics
    assert (diagnostic.line, diagnostic.level) == (
        relu,
        "inductor",
    ) and "no lowering for this op here" in diagnostic.message


def test_a_compile_past_the_traces_time_is_a_timeout_of_this_level_alone():
    """The trace's deadline reaches the level (Analysis -> ClassContext); a compile that would run past it
    (less a margin to report in) stops as this level's timeout, before the worker stops the whole trace."""
    import time

    import torch
    from fxlens import lines as line_model
    from fxlens.messages import TraceRequest
    from fxlens.worker.analysis.analyse import Analysis
    from fxlens.worker.failures.classify import whole_line
    from fxlens.worker.levels import inductor
    from fxlens.worker.levels.inductor_capture import MARGIN_SECONDS
    from fxlens.worker.load import loader

    analysis = Analysis(TraceRequest(str(LADDER), text=LADDER.read_text(), timeout=30))
    assert 29 < analysis.deadline - time.monotonic() <= 30
    text = LADDER.read_text()
    module = loader.load(str(LADDER), text, "safe", loader.parse(str(LADDER), text), [], {}).module
    lines = line_model.split(text)
    example = SimpleNamespace(
        instance=module.Net(), inputs=(torch.randn(2, 3),), kwargs={}, build=Build(), rebuild=None
    )
    span = whole_line(7, lines)
    result = inductor.run(example, str(LADDER), lines, span, deadline=time.monotonic() + MARGIN_SECONDS / 2)
    assert not result.ok and [d.category for d in result.diagnostics] == ["timeout"]
    assert result.diagnostics[0].line == span.line and "fxlens.timeoutSeconds" in result.diagnostics[0].fix
    assert torch._C._len_torch_function_stack() == 0  # nothing left behind
    assert inductor.run(example, str(LADDER), lines, span, deadline=time.monotonic() + 120).ok


def test_a_graph_compiled_before_is_read_back_not_compiled_again(tmp_path, monkeypatch):
    """The compiled-graph cache (inductor_cache.CompiledCache): the same class again gives the same kernels,
    its compile not run; a change to the code it compiles (another line) is compiled."""
    import torch
    from fxlens import lines as line_model
    from fxlens.worker.failures.classify import whole_line
    from fxlens.worker.levels import inductor
    from fxlens.worker.load import loader
    from torch._inductor import compile_fx

    _fresh_folder(tmp_path, monkeypatch)
    text = LADDER.read_text()
    module = loader.load(str(LADDER), text, "safe", loader.parse(str(LADDER), text), [], {}).module
    lines = line_model.split(text)
    example = SimpleNamespace(
        instance=module.Net(), inputs=(torch.randn(2, 3),), kwargs={}, build=Build(), rebuild=None
    )
    first = inductor.run(example, str(LADDER), lines, whole_line(7, lines))
    assert first.ok and len(list((Path(_torch_folder()) / inductor_cache.COMPILED).glob("*.json"))) == 1
    with mock.patch.object(compile_fx, "compile_fx", side_effect=AssertionError("compiled again")):
        again = inductor.run(example, str(LADDER), lines, whole_line(7, lines))
    assert [(n.name, n.kernel["code"], n.kernel["lines"]) for n in again.nodes] == [
        (n.name, n.kernel["code"], n.kernel["lines"]) for n in first.nodes
    ]
    moved = tmp_path / "moved_ladder.py"  # the same code one line down: other stack traces, another key
    moved.write_text("\n" + text)
    shifted = loader.load(
        str(moved), moved.read_text(), "safe", loader.parse(str(moved), moved.read_text()), [], {}
    ).module
    other = SimpleNamespace(instance=shifted.Net(), inputs=(torch.randn(2, 3),), kwargs={}, build=Build(), rebuild=None)
    moved_lines = line_model.split(moved.read_text())
    result = inductor.run(other, str(moved), moved_lines, whole_line(8, moved_lines))
    assert [n.kernel["lines"] for n in result.nodes] == [[line + 1 for line in n.kernel["lines"]] for n in first.nodes]

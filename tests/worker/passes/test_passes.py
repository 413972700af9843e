"""Graph passes through the worker, as `fxlens pass` and the editor run them: the diff, the proof, and
the diagnostics a buggy pass gets in its own file; checked against the same pass written with torch."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.fx as fx
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.messages import PassRequest
from fxlens.pass_catalog import user_passes
from torch import nn

ROOT = Path(__file__).resolve().parents[3]
PASSES = ROOT / "tests" / "fixtures" / "passes"
TINY = PASSES / "tinynet.py"
CONV = PASSES / "convnet.py"
MORE = PASSES / "more_passes.py"
CONV_BN = PASSES / "conv_bn.py"

RUNS = {
    "fuse": (TINY, "TinyNet", "fuse-linear-relu", None),
    "clamp": (TINY, "TinyNet", "relu-to-clamp", None),
    "dead": (TINY, "TinyNet", "dead-code", None),
    "sigmoid": (TINY, "TinyNet", "relu_to_sigmoid", TINY),
    "erase": (TINY, "TinyNet", "erase_used", TINY),
    "lint": (TINY, "TinyNet", "breaks_lint", TINY),
    "nothing": (TINY, "TinyNet", "does_nothing", TINY),
    "elsewhere_bad": (TINY, "TinyNet", "drop_relu_badly", MORE),
    "elsewhere": (TINY, "TinyNet", "drop_relu", MORE),
    "prepare": (CONV, "ConvNet", "prepare-fx", None),
    "qat": (CONV, "ConvNet", "prepare-qat-fx", None),
    "fold": (CONV_BN, "ConvBlock", "fold_batchnorm", CONV_BN),
    "scale": (CONV_BN, "ConvBlock", "scale_conv_output", CONV_BN),
}


@pytest.fixture(scope="module")
def results() -> dict:
    """Every run above, through one worker (each in its own trace child, as the editor runs them)."""

    async def run_all() -> dict:
        client = WorkerClient(sys.executable)
        await client.start()
        try:
            found = {}
            for key, (model, cls, name, pass_file) in RUNS.items():
                request = (
                    PassRequest(name, "builtin")
                    if pass_file is None
                    else PassRequest(name, "user", str(pass_file), pass_file.read_text())
                )
                _, found[key] = await client.run_pass(str(model), model.read_text(), TraceOptions(), cls, request)
            return found
        finally:
            await client.stop()

    return asyncio.run(run_all())


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lesson_fusion(gm: fx.GraphModule) -> fx.GraphModule:
    """The lesson's pass, written with torch alone."""
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(modules[node.target], nn.Linear) and len(node.users) == 1:
            relu = next(iter(node.users))
            if relu.target is torch.relu:
                gm.add_submodule(f"{node.target}_relu", nn.Sequential(modules[node.target], nn.ReLU()))
                with gm.graph.inserting_after(relu):
                    fused = gm.graph.call_module(f"{node.target}_relu", node.args)
                relu.replace_all_uses_with(fused)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return gm


def test_fusion_of_the_lessons_tinynet_matches_torch_and_keeps_results(results):
    report = results["fuse"]
    assert report.ok and report.total_before == 5 and report.total_after == 4
    torch.manual_seed(0)
    model = _load(TINY).TinyNet().eval()
    by_torch = _lesson_fusion(fx.symbolic_trace(model))
    ours = [(n.op, n.name) for n in report.nodes_after]
    assert ours == [(n.op, n.name) for n in by_torch.graph.nodes]
    x = torch.randn(4, 8)
    assert torch.equal(by_torch(x), model(x))  # what fxlens's verdict claims, checked by torch
    assert report.proof.verdict == "equal" and report.proof.draws >= 2
    assert all(o.equal and o.max_abs_diff == 0.0 for o in report.proof.outputs)
    changed = {(c.change, c.name) for c in report.changes}
    assert changed == {("removed", "fc1"), ("removed", "relu"), ("added", "fc1_relu")}
    fused = next(c for c in report.changes if c.name == "fc1_relu")
    assert fused.replaces == ["fc1", "relu"] and fused.how == "from_node" and fused.line == 13
    assert "-    %relu" in report.diff and "+    %fc1_relu" in report.diff
    assert "self.fc1_relu(x)" in report.code_after


def test_relu_to_clamp_is_equal_and_retargets_in_place(results):
    report = results["clamp"]
    assert [(c.change, c.name, c.target) for c in report.changes] == [("retargeted", "relu", "torch.clamp")]
    assert report.proof.verdict == "equal"


def test_a_pass_that_changes_results_says_so_with_the_difference(results):
    report = results["sigmoid"]
    assert report.ok and report.proof.verdict == "changes results"
    check = report.proof.outputs[0]
    assert not check.equal and check.max_abs_diff > 0.01
    assert "max |diff|" in report.proof.first_difference


def test_erasing_a_used_node_is_an_error_at_the_pass_line(results):
    report = results["erase"]
    assert not report.ok
    (diagnostic,) = report.diagnostics
    line = TINY.read_text().split("\n").index("            gm.graph.erase_node(node)") + 1
    assert (diagnostic.line, diagnostic.category, diagnostic.severity) == (line, "pass-erased-used-node", "error")
    assert "relu" in diagnostic.message and "replace_all_uses_with" in diagnostic.fix


def test_a_graph_failing_lint_is_an_error_at_the_pass_def(results):
    report = results["lint"]
    (diagnostic,) = report.diagnostics
    (info,) = [p for p in user_passes(str(TINY), TINY.read_text()) if p.name == "breaks_lint"]
    assert (diagnostic.line, diagnostic.category) == (info.line, "pass-lint")
    assert "fc3" in diagnostic.message


def test_a_pass_that_changes_nothing_gets_a_hint(results):
    report = results["nothing"]
    assert report.ok and report.changes == []
    assert [(d.severity, d.category) for d in report.diagnostics] == [("hint", "pass-no-change")]


def test_a_pass_in_another_file_reports_in_that_file(results):
    bad = results["elsewhere_bad"]
    assert bad.pass_path == str(MORE)
    (diagnostic,) = bad.diagnostics
    assert diagnostic.line == MORE.read_text().split("\n").index("    gm.graph.erase_node(relu)") + 1
    good = results["elsewhere"]
    assert good.ok and [(c.change, c.name) for c in good.changes] == [("removed", "relu")]
    assert good.proof.verdict == "changes results"


def test_prepare_fx_lists_observers_and_reports_quantization_as_numbers(results):
    report = results["prepare"]
    observers = [c for c in report.changes if c.change == "added"]
    assert len(observers) >= 3 and all("Observer" in c.target for c in observers)
    assert report.proof.verdict == "equal"  # observers only watch
    converted = report.proof.converted
    assert converted is not None and converted.verdict == "quantized"
    assert 0 < converted.outputs[0].max_abs_diff < 1 and converted.outputs[0].sqnr_db > 10
    qat = results["qat"]
    assert qat.proof.verdict == "quantized" and qat.proof.outputs[0].sqnr_db is not None
    assert {("retargeted", "conv"), ("retargeted", "fc")} <= {(c.change, c.name) for c in qat.changes}


def test_a_module_the_pass_replaced_is_listed_as_changed(results):
    report = results["fold"]
    # the norm folded into the conv: the conv node stays, its module is another one with other weights
    assert [(c.change, c.name) for c in report.changes] == [("changed", "conv"), ("removed", "bn")]
    conv = report.changes[0]
    assert conv.detail == "module replaced: weight, bias changed" and conv.line == 18
    assert report.proof.verdict in ("equal", "close")
    # torch agrees: the folded conv's weights are not the conv's
    torch.manual_seed(0)
    model = _load(CONV_BN).ConvBlock().eval()
    folded = _load(CONV_BN).fold_batchnorm(fx.symbolic_trace(model))
    assert not torch.equal(folded.conv.weight, model.conv.weight)


def test_a_node_inserted_after_another_takes_over_its_users_not_its_place(results):
    report = results["scale"]
    (mul,) = report.changes
    # conv is still in the graph: the mul did not replace it, it took over its users
    assert (mul.change, mul.name, mul.replaces, mul.took_users_of) == ("added", "mul", [], ["conv"])
    assert any(n.name == "conv" for n in report.nodes_after)


def fxlens(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    return subprocess.run(
        [sys.executable, "-m", "fxlens", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )


def test_cli_json_and_exit_status():
    run = fxlens("pass", str(TINY), "--class", "TinyNet", "--pass", "relu_to_sigmoid", "--json")
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert data["schema"] == 1 and data["proof"]["verdict"] == "changes results"
    assert data["changes"][0]["line"] == 13 and data["changes"][0]["col"] >= 0


def test_cli_list_and_unknown_pass():
    listed = fxlens("pass", str(TINY), "--list")
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names[:2] == ["dead-code", "fuse-linear-relu"] and "relu_to_sigmoid" in names
    unknown = fxlens("pass", str(TINY), "--class", "TinyNet", "--pass", "nope")
    assert unknown.returncode == 2 and "no pass 'nope'" in unknown.stderr

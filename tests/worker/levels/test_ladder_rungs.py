"""Each level named by its opcode mix (render/ladder.py), on real traced levels, checked against the
graphs torch itself makes of the same modules: symbolic_trace keeps call_module nodes, torch.export's
computing nodes are all OpOverloads, dynamo's are torch functions."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.render.graph_view import graph_payload
from fxlens.render.hover import hover_text
from fxlens.render.ladder import rung
from fxlens.render.lens import class_lenses
from fxlens_command import fxlens

ROOT = Path(__file__).resolve().parents[3]
LADDER = ROOT / "tests" / "fixtures" / "models" / "ladder.py"
LEVELS = ("fx", "aten", "core-aten", "backward", "dynamo")
ABOVE_MODULES, ABOVE_TORCH, BELOW = (
    "above aot_autograd (module level)",
    "above aot_autograd (torch level)",
    "below aot_autograd (ATen)",
)


@pytest.fixture(scope="module")
def report():
    async def go():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(LADDER), LADDER.read_text(), TraceOptions(levels=LEVELS))
        finally:
            await client.stop()

    return asyncio.run(go())


def _instance(name: str) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location("ladder_fixture", LADDER)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ladder_fixture"] = module
    spec.loader.exec_module(module)
    return getattr(module, name)()


def _torch_says(graph: torch.fx.Graph) -> str | None:
    """The same rule read off torch's own graph objects."""
    computing = [
        n
        for n in graph.nodes
        if n.op in ("call_function", "call_method", "call_module") and n.target is not __import__("operator").getitem
    ]
    if any(n.op == "call_module" for n in computing):
        return ABOVE_MODULES
    if all(n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) for n in computing):
        return BELOW
    if not any(isinstance(n.target, torch._ops.OpOverload) for n in computing):
        return ABOVE_TORCH
    return None


@pytest.mark.parametrize("name", ["Net", "PreNorm"])
def test_every_level_is_named_as_torch_graphs_say(report, name):
    cls = report.find_class(name)
    instance = _instance(name)
    x = torch.randn(2, 3) if name == "Net" else torch.randn(2, 5, 8)
    assert _torch_says(torch.fx.symbolic_trace(instance).graph) == ABOVE_MODULES
    exported = torch.export.export(instance, (x,))
    assert _torch_says(exported.graph) == BELOW
    assert _torch_says(exported.run_decompositions().graph) == BELOW
    names = {level: rung(result).name for level, result in cls.levels.items() if result.ok}
    assert names == {"fx": ABOVE_MODULES, "aten": BELOW, "core-aten": BELOW, "backward": BELOW, "dynamo": ABOVE_TORCH}


def test_dynamo_graphs_hold_torch_functions_not_modules(report):
    import torch._dynamo

    graphs = torch._dynamo.explain(_instance("Net"))(torch.randn(2, 3)).graphs
    assert all(_torch_says(g.graph) == ABOVE_TORCH for g in graphs)
    assert rung(report.find_class("Net").levels["dynamo"]).name == ABOVE_TORCH


def test_lens_hover_graph_view_and_cli_show_the_rung(report):
    cls = report.find_class("Net")
    # the summary lens's tooltip: a line per level, its rung after it
    tooltips = {line.split(":")[0]: line for line in class_lenses(cls, LEVELS)[1].tooltip.splitlines()}
    assert tooltips["fx"].endswith(f" — {ABOVE_MODULES}: 1 call_module node: submodules are still calls")
    assert tooltips["core-aten"].endswith(f" — {BELOW}: every computing node is an ATen overload")
    hover = hover_text(report, cls.line, 6, markdown=False)
    rows = {line.split()[0]: line for line in hover.splitlines() if line.split() and line.split()[0] in LEVELS}
    assert rows["fx"].endswith(ABOVE_MODULES) and rows["backward"].endswith(BELOW)
    assert graph_payload("file:///x", cls, "aten")["rung"] == BELOW
    run = fxlens("graph", str(LADDER), "--class", "Net", "--level", "core-aten", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["rung"] == BELOW
    text = fxlens("graph", str(LADDER), "--class", "Net", "--level", "fx").stdout
    assert f"rung: {ABOVE_MODULES} — 1 call_module node: submodules are still calls" in text

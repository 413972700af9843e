"""torch.cond for data-dependent branches of several statements, on the corpus's adaptive.py at the fx and dynamo
levels: each branch a local function of the tensors it reads, proven at dynamo and never claimed at fx (where
symbolic_trace cannot trace torch.cond, which the proof says); branches that change module state, log, loop
or write into a tensor get no fix and say why. The fixed classes are then checked with torch itself: no graph
break in torch.compile, torch.export traces them, and both outcomes of the branch give the original's outputs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch
from fix_support import load_text, only_fix, report_with_fixes
from fxlens.engine.fixes import apply_fix
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import FileReport

ADAPTIVE = Path(__file__).resolve().parents[2] / "fixtures" / "fixes" / "adaptive.py"
PROVEN = ("RefineBlock", "EarlyExitHead", "OverflowRescale", "GatedResidual", "ConfidenceMixer")


@pytest.fixture(scope="module")
def adaptive() -> FileReport:
    return report_with_fixes(ADAPTIVE, ("fx", "dynamo"))


def test_several_statements_per_branch_become_torch_cond_with_fx_left_as_said(adaptive):
    fix = only_fix(adaptive, "RefineBlock")
    assert fix.rule == "torch-cond" and fix.proven, fix.why_not()
    (edit,) = fix.edits
    assert edit.new_text == (
        "def then_branch(h, x):\n"
        "            h = self.norm(h)\n"
        "            h = self.refine(F.gelu(h))\n"
        "            h = h + x\n"
        "            return h\n"
        "\n"
        "        def else_branch(h, x):\n"
        "            h = h * 0.5\n"
        "            h = h + x\n"
        "            return h\n"
        "\n"
        "        h = torch.cond(h.var() > 1.0, then_branch, else_branch, (h, x))"
    )
    fx, dynamo = fix.proof.levels
    assert (fx.level, fx.before, fx.after, fx.unclaimed) == ("fx", 1, 1, "symbolic_trace cannot trace torch.cond")
    assert dynamo.what == "graph breaks" and dynamo.after < dynamo.before
    assert fix.label().startswith(
        "Use torch.cond — fx failures 1 → 1 (symbolic_trace cannot trace torch.cond), graph breaks 1 → 0"
    )


def test_returning_branches_and_one_sided_branches(adaptive):
    early = only_fix(adaptive, "EarlyExitHead")
    assert early.proven, early.why_not()
    assert early.edits[0].new_text.endswith(
        "return torch.cond(quick.max(-1).values.mean() > 0.5, then_branch, else_branch, (quick, x))"
    )
    one_sided = only_fix(adaptive, "OverflowRescale")
    assert one_sided.proven, one_sided.why_not()
    text = one_sided.edits[0].new_text
    assert "return (scale.clone(), h.clone())" in text  # torch.cond refuses a branch returning its own input
    assert text.endswith("scale, h = torch.cond(h.norm() > 6.0, then_branch, else_branch, (scale, h))")
    assert only_fix(adaptive, "GatedResidual").proven and only_fix(adaptive, "ConfidenceMixer").proven


@pytest.mark.parametrize(
    ("class_name", "why"),
    [
        ("HitCountingBlock", "a branch changes module state (`self.heavy_calls`)"),
        ("NoisyBranch", "a branch calls `logger.info('clipping activations')` for its effect"),
        ("IterativeRefine", "a branch has a `For` statement"),
        ("MaskedFill", "a branch writes into a tensor (`h[weak]`)"),
    ],
)
def test_branches_torch_cond_cannot_keep_get_no_fix_and_say_why(adaptive, class_name, why):
    fix = only_fix(adaptive, class_name)
    assert not fix.proven and fix.edits == []
    assert why in fix.why_not()


def test_the_fixed_classes_compile_without_breaks_export_and_keep_the_outputs(adaptive):
    text = ADAPTIVE.read_text()
    original_module = load_text("adaptive_original", text)
    for name in PROVEN:
        fix = only_fix(adaptive, name)
        torch.manual_seed(0)
        original = getattr(original_module, name)()
        fixed = getattr(load_text(f"adaptive_fixed_{name}", apply_fix(text, fix)), name)()
        fixed.load_state_dict(original.state_dict())
        x = torch.randn(4, 32, generator=torch.Generator().manual_seed(9))
        assert torch._dynamo.explain(fixed)(x).graph_break_count == 0
        program = torch.export.export(fixed, (x,), strict=False)
        with torch.no_grad():
            for inputs in (x, -x, x * 10, x * 0.01):  # both outcomes of the branch
                expected = original(inputs)
                torch.testing.assert_close(fixed(inputs), expected, rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(program.module()(inputs), expected, rtol=1e-5, atol=1e-6)


def test_fxlens_check_exports_the_fixed_class_at_the_aten_level(adaptive, tmp_path):
    """`fxlens check` runs forward eagerly under a recording mode first (size_probe.py); torch.cond compiled
    there failed and torch.compile kept the failure for the export that followed."""
    fixed = tmp_path / "adaptive.py"
    fixed.write_text(apply_fix(ADAPTIVE.read_text(), only_fix(adaptive, "RefineBlock")))

    async def go() -> FileReport:
        client = WorkerClient()
        await client.start()
        try:
            options = TraceOptions(levels=("aten",), surface="check", cost=False, fixes=False, timeout=600)
            return await client.analyse(str(fixed), fixed.read_text(), options)
        finally:
            await client.stop()

    aten = asyncio.run(go()).find_class("RefineBlock").levels["aten"]
    assert aten.ok and not [d for d in aten.diagnostics if d.severity == "error"]
    assert any("cond" in n.target for n in aten.nodes)

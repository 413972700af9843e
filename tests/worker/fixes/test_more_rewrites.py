"""The rewrites beyond slice one, on the corpus's normalisation layers at the fx level: each proven, each edit
as a person would write it, and the fixed file traced by torch itself with the original's outputs."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import torch.fx
from fxlens.engine.fixes import apply_all
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import FileReport

NORMS = Path(__file__).resolve().parents[2] / "fixtures" / "fixes" / "norms.py"


@pytest.fixture(scope="module")
def norms() -> FileReport:
    async def go() -> FileReport:
        client = WorkerClient()
        await client.start()
        try:
            options = TraceOptions(levels=("fx",), surface="check", cost=False, fixes=True)
            return await client.analyse(str(NORMS), NORMS.read_text(), options)
        finally:
            await client.stop()

    return asyncio.run(go())


def _edit(report: FileReport, class_name: str) -> tuple[str, str]:
    (fix,) = report.find_class(class_name).fixes
    assert fix.proven, fix.why_not()
    (edit,) = fix.edits
    return fix.rule, edit.new_text


def test_each_rewrite_proposes_what_a_person_would_write(norms):
    assert _edit(norms, "CheckedRMSNorm") == (
        "torch-assert",
        'torch._assert(torch.isfinite(x).all(), "RMSNorm got a non-finite input")',
    )
    assert _edit(norms, "BatchAverage") == ("shape-not-len", "x.shape[0]")
    assert _edit(norms, "CenteredNorm") == ("keep-tensor", "h.mean()")
    assert _edit(norms, "ClippedNorm") == (
        "torch-where",
        "return torch.where(x.abs().max() > limit, limit * torch.tanh(x / limit), x)",
    )
    assert _edit(norms, "GainNorm") == ("torch-where", "y = torch.where(x.abs().mean() < 0.1, y * (2.0), y)")


def _load(name: str, text: str):
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(text, f"<{name}>", "exec"), module.__dict__)
    return module


def test_the_fixed_file_traces_in_torch_with_the_original_outputs(norms):
    text = NORMS.read_text()
    fixed_text, applied = apply_all(text, norms)
    assert len(applied) >= 5
    original, fixed = _load("norms_original", text), _load("norms_fixed", fixed_text)
    for name in ("CheckedRMSNorm", "FloorRMSNorm", "CenteredNorm", "BatchAverage", "ClippedNorm", "GainNorm"):
        torch.manual_seed(0)
        before = getattr(original, name)()
        after = getattr(fixed, name)()
        after.load_state_dict(before.state_dict())
        graph = torch.fx.symbolic_trace(after)
        for seed in (11, 12):
            x = torch.randn(4, 32, generator=torch.Generator().manual_seed(seed))
            for inputs in (x, -x, x * 0.01):
                torch.testing.assert_close(graph(inputs), before(inputs), rtol=1e-5, atol=1e-6)

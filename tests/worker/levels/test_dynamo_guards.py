"""The dynamo level's guards against torch itself: the same classes compiled directly with torch's guard log
on (tests/support/raw_guards.py prints the tree of every frame dynamo compiled), check for check."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from background_run import BackgroundRun
from fxlens.engine.worker_client import TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
GUARDED = ROOT / "tests" / "fixtures" / "lsp" / "guarded.py"
# as the fixture's directives build and call them, on the tensors fxlens runs each on (its report says which)
CALLS = {
    "Blend": {"build": "Blend(16, 8)", "args": [[4, 16], 2], "device": "meta", "grown": [[8, 16], 2]},
    "Recentre": {"build": "Recentre()", "args": [[3, 5]], "device": "cpu"},
}


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    run = BackgroundRun(
        [sys.executable, str(ROOT / "tests" / "support" / "raw_guards.py"), str(GUARDED), json.dumps(CALLS)],
        tmp_path_factory.mktemp("raw-guards"),
        timeout=300,
    )
    yield run
    run.stop()


@pytest.fixture(scope="module")
def report(raw):
    async def go():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(GUARDED), GUARDED.read_text(), TraceOptions(levels=("fx", "dynamo")))
        finally:
            await client.stop()

    return asyncio.run(go())


def _line(text: str) -> int:
    return next(i for i, line in enumerate(GUARDED.read_text().splitlines(), 1) if text in line)


def _same_process_free(code: str) -> str:
    """What differs between two processes running the same code: object ids, the module a class was loaded as."""
    code = re.sub(r"(___check_(?:obj|type)_id\(.*), \d+\)", r"\1, ID)", code)
    return re.sub(r"<class '[\w.]*\.(\w+)'>", r"<class '\1'>", code)


def _checks(frame) -> list[list[str]]:
    return [[g.kind, _same_process_free(g.code)] for g in frame.guards]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_guard_of_every_compiled_frame_is_torchs(report, raw, name):
    cls = report.find_class(name)
    assert cls.build.tensors == CALLS[name]["device"]
    result = cls.levels["dynamo"]
    theirs = [[[kind, _same_process_free(code)] for kind, code in tree] for tree in raw.json()[name]["trees"]]
    assert [_checks(frame) for frame in result.frames] == theirs
    assert all(frame.cut == 0 for frame in result.frames)


def test_a_break_resumes_in_a_second_frame_named_for_its_function(report):
    frames = report.find_class("Recentre").levels["dynamo"].frames
    assert [(f.function, f.compile_id, f.resumed_at) for f in frames] == [
        ("Recentre.forward", "0/0", None),
        ("Recentre.forward", "1/0", _line("if h.mean() > 0:")),
    ]
    assert frames[0].line == _line("def forward(self, x):")
    assert frames[1].line is None  # a resumed frame's code starts at its break: no `def` for a lens


def test_guards_say_the_values_shapes_and_lines_torch_assumed(report):
    [frame] = report.find_class("Blend").levels["dynamo"].frames
    assert frame.line == _line("def forward(self, x, repeats")
    by_subject = {(g.kind, g.subject): g for g in frame.guards}
    x = by_subject["TENSOR_MATCH", "x"]
    assert (x.role, x.dtype, x.shape, x.requires_grad) == ("input", "float32", [4, 16], False)
    assert x.line == _line("y = self.proj(x) * self.gain")  # the call that used it, not nn.Linear's line
    weight = by_subject["TENSOR_MATCH", "self.proj.weight"]
    assert (weight.role, weight.shape, weight.requires_grad) == ("attribute", [8, 16], True)
    gain = by_subject["EQUALS_MATCH", "self.gain"]
    assert (gain.value, gain.line) == ("0.5", _line("y = self.proj(x) * self.gain"))
    gated = by_subject["TRUE_MATCH", "self.gated"]
    assert (gated.value, gated.line) == ("True", _line("if self.gated:"))
    repeats = by_subject["EQUALS_MATCH", "repeats"]
    assert (repeats.role, repeats.value, repeats.line) == ("input", "2", _line("return y.repeat(1, repeats)"))
    [state] = [g for g in frame.guards if g.kind == "GLOBAL_STATE"]
    assert state.state["grad_mode"] is True and state.state["default_dtype_name"] == "float32"


def test_the_recompile_proof_counts_what_torch_compiles_again_at_a_second_batch_size(report, raw):
    proof = report.find_class("Blend").levels["dynamo"].dynamic
    theirs = raw.json()["Blend"]
    assert (proof.marks, proof.sizes) == ([["x", [0]]], [[[4]], [[8]]])  # the batch, doubled
    assert (proof.static_recompiles, proof.dynamic_recompiles) == (theirs["static"], theirs["dynamic"]) == (1, 0)
    assert proof.marked_recompiles == 0 and proof.outputs == "equal"
    assert proof.proven()


def test_a_size_the_model_fixes_is_not_proven_and_says_why(report):
    proof = report.find_class("Pairs").levels["dynamo"].dynamic
    assert not proof.proven()
    assert "shape '[2, 12]' is invalid for input of size 48" in proof.error

"""The worker's order of work: every class's fx and aten, then a stage event, then the deeper levels;
a request for deeper levels only (what the server sends on demand) carries no build hints."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxlens.engine.worker_client import Listeners, TraceAsk, TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
MLP = ROOT / "tests" / "fixtures" / "backward" / "mlp.py"  # three classes, each with a directive
# no directive and a required constructor argument: fxlens guesses it, and says so in a hint
GUESSED = """import torch
from torch import nn


class Widen(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""


def _events(path: Path, levels: tuple[str, ...], notes: bool = True, classes=None):
    seen: list[tuple] = []

    async def go():
        client = WorkerClient()
        await client.start()
        try:
            report = await client.submit(
                str(path),
                path.read_text(),
                TraceOptions(levels=levels),
                TraceAsk(classes=classes, notes=notes),
                Listeners(
                    on_class=lambda c: seen.append(("class", c.name, tuple(c.levels))),
                    on_stage=lambda done: seen.append(("stage", tuple(done))),
                ),
            )
            return seen, report
        finally:
            await client.stop()

    return asyncio.run(go())


def test_deeper_levels_come_after_every_class_has_fx_and_aten():
    seen, report = _events(MLP, ("backward", "aten", "fx", "core-aten"))
    stage = seen.index(("stage", ("fx", "aten")))
    before, after = seen[:stage], seen[stage + 1 :]
    assert {name for _, name, levels in before if "aten" in levels} == {"MLP", "ScalarLoss", "NoParams"}
    assert not any({"backward", "core-aten"} & set(levels) for _, _, levels in before)
    # after the stage, each class's deeper levels join what it has (in the ladder's order)
    assert all(levels[:2] == ("fx", "aten") for _, _, levels in after)
    assert report.find_class("MLP").levels.keys() == {"fx", "aten", "core-aten", "backward"}
    assert list(report.find_class("MLP").levels) == ["fx", "aten", "core-aten", "backward"]


def test_a_request_for_deeper_levels_only_adds_no_build_hints(tmp_path):
    path = tmp_path / "widen.py"
    path.write_text(GUESSED)
    _, with_notes = _events(path, ("fx",))
    assert [d.category for d in with_notes.all_diagnostics()] == ["guessed"]
    seen, without = _events(path, ("core-aten",), notes=False)
    assert not any(kind == "stage" for kind, *_ in seen)  # no cheap level: no stage
    assert without.find_class("Widen").levels["core-aten"].ok
    assert without.all_diagnostics() == []

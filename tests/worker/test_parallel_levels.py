"""A large model's levels are traced on two cores at once: the events are the ones one core makes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxlens.worker import analyse
from fxlens.worker.beside import other_cores
from fxlens.worker.postmortem import encode_event

NANOGPT = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "nanogpt.py"


def events(monkeypatch, threshold: int) -> list[dict]:
    monkeypatch.setattr(analyse, "MODULES_WORTH_ANOTHER_CORE", threshold)
    sent: list = []
    analyse.Analysis(str(NANOGPT), NANOGPT.read_text(), ["fx", "aten"], "safe", None, None).run(sent.append)
    decoded = [json.loads(e if isinstance(e, str) else encode_event(e)) for e in sent]
    for event in decoded:
        # (a second load in one process registers the module under another name: a fresh trace child
        # never does, but the fingerprint sees it)
        event["class"]["fingerprint"] = None
        for level in event["class"]["levels"].values():
            level["seconds"] = 0.0
    return decoded


@pytest.mark.skipif(not other_cores(), reason="one core: the levels are always traced one after the other")
def test_levels_beside_each_other_give_the_same_events(monkeypatch):
    one_core = events(monkeypatch, threshold=1 << 30)
    two_cores = events(monkeypatch, threshold=0)
    assert [(e["class"]["name"], list(e["class"]["levels"])) for e in two_cores] == \
        [(e["class"]["name"], list(e["class"]["levels"])) for e in one_core]
    assert any(n["shape"] and "B" in n["shape"] for e in two_cores for lv in e["class"]["levels"].values()
               for n in lv["nodes"] if lv["level"] == "aten"), "named sizes come back from the grown export"
    assert two_cores == one_core

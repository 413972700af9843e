"""Costs counted after a trace's `done` reach who listens for them and join the class they were counted for,
and only that class."""

import asyncio
import json

from fxlens.engine.documents import Traced
from fxlens.engine.incremental import classes_without_cost, with_cost
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import ClassReport, Cost, FileReport, to_json

TEXT = "class A: ...\n"


def test_a_cost_joins_the_class_of_its_fingerprint_or_of_its_very_text():
    cost = Cost(parameters=36, forward_flops=128)
    held = ClassReport("A", 1, 1, fingerprint="f1")
    assert with_cost(held, TEXT, TEXT + "", "A", "f1", cost).cost == cost
    assert with_cost(held, "other text", TEXT, "A", "f1", cost).cost == cost  # lines moved, same class
    assert with_cost(held, "other text", TEXT, "A", "f2", cost).cost is None  # the class changed since
    assert with_cost(held, TEXT, TEXT, "B", "f1", cost).cost is None
    unhashed = ClassReport("A", 1, 1)
    assert with_cost(unhashed, TEXT, TEXT, "A", None, cost).cost == cost  # the very text it was counted for
    assert with_cost(unhashed, "other text", TEXT, "A", None, cost).cost is None


def test_the_classes_held_without_a_cost_are_counted_again():
    options = TraceOptions()
    report = FileReport(
        "/a.py",
        classes=[
            ClassReport("A", 1, 1, fingerprint="f1", cost=Cost()),
            ClassReport("B", 2, 2, fingerprint="f2"),
            ClassReport("C", 3, 3),
        ],
    )
    good = Traced(1, TEXT, report, options)
    assert classes_without_cost(good, options) == ["B"]  # (C has no fingerprint: it is traced again anyway)
    assert classes_without_cost(good, TraceOptions(cost=False)) == []
    assert classes_without_cost(None, options) == []


async def test_costs_read_in_one_go_with_the_report_reach_their_listener():
    """On a loaded machine the server reads `done`, the costs and `end` in one go, before the request's
    result has been taken: the costs still reach who listens for them."""
    client = WorkerClient()
    client._pending[3] = (asyncio.get_running_loop().create_future(), None, {})
    heard: list[tuple[str, Cost]] = []
    client._on_cost.listen(3, "/p/m.py", lambda name, fingerprint, cost: heard.append((name, cost)))
    cost = Cost(parameters=36, trainable=36, forward_flops=64, backward_flops=128)
    for event in (
        {"event": "done", "report": to_json(FileReport("/p/m.py")), "costs": True},
        {"event": "cost", "class": "Encoder", "fingerprint": "f1", "cost": to_json(cost)},
        {"event": "end"},
    ):
        client._dispatch(json.dumps({"id": 3, **event}).encode())  # (as the worker relays them)
    assert (await client._pending[3][0]).path == "/p/m.py"
    assert heard == [("Encoder", cost)]
    assert not client._on_cost.listening(3)  # its `end` was heard too

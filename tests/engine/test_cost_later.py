"""Costs counted after a trace's `done` join the class they were counted for, and only that class."""
from fxlens.engine.documents import Traced
from fxlens.engine.incremental import classes_without_cost, with_cost
from fxlens.engine.worker_client import TraceOptions
from fxlens.report import ClassReport, Cost, FileReport

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
    report = FileReport("/a.py", classes=[ClassReport("A", 1, 1, fingerprint="f1", cost=Cost()),
                                          ClassReport("B", 2, 2, fingerprint="f2"), ClassReport("C", 3, 3)])
    good = Traced(1, TEXT, report, options)
    assert classes_without_cost(good, options) == ["B"]  # (C has no fingerprint: it is traced again anyway)
    assert classes_without_cost(good, TraceOptions(cost=False)) == []
    assert classes_without_cost(None, options) == []

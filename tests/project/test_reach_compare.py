"""The reach benchmark's agreement check and rebuild recipes (bench/reach.py): pure functions on report data.
The check is what says fxlens's nodes are raw torch's, so it must catch every kind of difference."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import reach


def _node(name, op, target, users, line, shape=None, dtype=None):
    return {"name": name, "op": op, "target": target, "num_users": users, "line": line, "shape": shape, "dtype": dtype}


NODES = [
    _node("x", "placeholder", "x", 1, None, ["B", "T", 4], "float32"),
    _node("fc", "call_module", "fc", 1, 12, ["B", "T", 8], "float32"),
    _node("view", "call_method", "view", 1, 13, ["B*T", 8], "float32"),
    _node("output", "output", "output", 0, None),
]
ROWS = [
    ["x", "placeholder", "x", 1, None, [2, 8, 4], "float32"],
    ["fc", "call_module", "fc", 1, 12, [2, 8, 8], "float32"],
    ["view", "call_method", "view", 1, 13, [16, 8], "float32"],
    ["output", "output", "output", 0, None, None, None],
]


def test_the_same_nodes_agree_with_symbolic_sizes_evaluated():
    assert reach.compare(NODES, ROWS) == (True, "", 3)


@pytest.mark.parametrize(
    "index,field,value",
    [
        (1, 2, "fc2"),
        (1, 3, 2),
        (1, 4, 11),
        (2, 1, "call_function"),
        (1, 5, [2, 8, 9]),
        (1, 6, "float16"),
        (2, 5, [8, 8]),
    ],
)
def test_any_difference_is_caught(index, field, value):
    rows = [list(row) for row in ROWS]
    rows[index][field] = value
    agree, why, _ = reach.compare(NODES, rows)
    assert not agree and why


def test_a_missing_node_is_caught():
    assert not reach.compare(NODES, ROWS[:-1])[0]


def test_sizes_come_from_the_inputs_torch_was_given():
    obj = {"nodes": NODES, "inputs": {"args": [{"name": "x", "shape": ["B", "T", 4], "dtype": "float32"}]}}
    rows = [list(row) for row in ROWS]
    rows[0][5], rows[1][5], rows[2][5] = [3, 5, 4], [3, 5, 8], [15, 8]
    assert reach.agreement(obj, {"rows": rows, "inputs": [[3, 5, 4]]})[0]
    assert not reach.agreement(obj, {"rows": rows, "inputs": [[2, 8, 4]]})[0]


def test_a_size_known_only_at_run_time_matches_any_value():
    nodes = [_node("nonzero", "call_function", "torch.nonzero", 0, 3, ["u0", 2], "int64")]
    assert reach.compare(nodes, [["nonzero", "call_function", "torch.nonzero", 0, 3, [7, 2], "int64"]])[0]


def _levels(built, detail="", source="inferred", args=(), directive=None):
    inputs = {"built": built, "detail": detail, "source": source, "args": list(args)}
    if directive:
        inputs["directive"] = directive
    return {"fx": {"inputs": inputs, "ok": True, "nodes": [1], "diagnostics": []}}


def test_recipes_follow_what_the_report_says_it_built():
    spec = {"name": "x", "shape": ["B", 8], "dtype": "float32"}
    classes = {
        "GPT": _levels("config", "GPT(config=GPTConfig())", args=[spec]),
        "Block": _levels("parent", "the `h.0` instance built by GPT", source="parent"),
        "Head": _levels("call-in-file", "Head(8, 2) (line 40)", args=[spec]),
        "Net": _levels("no-arguments", args=[spec]),
        "ViT": _levels("guessed", "ViT(dim=64)", directive="ViT(dim=64)(torch.randn(2, 3, 32, 32))"),
        "Mlp": _levels("guessed", "Mlp(64)", args=[spec], directive="Mlp(in_features=64)"),
        "Head2": _levels("parent", "the `head` instance built by Mlp", args=[spec]),
        "Lost": _levels("unbuilt"),
    }
    recipe = {name: reach.recipe(name, levels, classes) for name, levels in classes.items()}
    assert recipe["GPT"] == {"kind": "expr", "build": "GPT(config=GPTConfig())", "inputs": [spec]}
    assert recipe["Block"] == {"kind": "parent", "parent": recipe["GPT"], "path": "h.0", "inputs": None, "specs": []}
    assert recipe["Head"]["build"] == "Head(8, 2)" and recipe["Net"]["build"] == "Net()"
    assert recipe["ViT"] == {"kind": "directive", "text": "ViT(dim=64)(torch.randn(2, 3, 32, 32))"}
    assert recipe["Mlp"] == {"kind": "expr", "build": "Mlp(in_features=64)", "inputs": [spec]}
    assert recipe["Head2"] == {
        "kind": "parent",
        "parent": recipe["Mlp"],
        "path": "head",
        "inputs": [spec],
        "specs": [spec],
    }
    assert recipe["Lost"] is None


def test_a_level_that_was_never_built_carries_the_class_reason():
    construction = {"severity": "error", "category": "construction"}
    levels = {"fx": {"ok": False, "diagnostics": [construction]}, "aten": {"ok": False, "diagnostics": []}}
    assert reach.failure_category("aten", levels) == "construction"
    assert reach.failure_category("fx", {"fx": {"ok": True, "diagnostics": []}}) == ""

"""The torch-free side of passes: finding `# fxlens: pass` functions, the report's JSON, the preview."""

from __future__ import annotations

import json

from fxlens.pass_catalog import BUILTIN_NAMES, cannot_run_on, user_passes
from fxlens.pass_report import NodeChange, OutputCheck, PassReport, Proof, pass_from_json, pass_to_json
from fxlens.render.pass_text import change_line
from fxlens.render.pass_view import pass_graph, pass_payload
from fxlens.report import Build, ClassReport, Diagnostic, LevelResult, Node

SOURCE = '''import torch

# fxlens: pass
def fuse(gm):
    """Fuse things."""
    return gm

# a note first
# fxlens: pass
@torch.no_grad()
def decorated(gm):
    return None

def unmarked(gm):
    return gm

# fxlens: Model()(torch.randn(2, 3))
class Model(torch.nn.Module):
    pass
'''


def test_user_passes_are_marked_functions_found_without_running_the_file():
    found = user_passes("/w/p.py", SOURCE)
    assert [(p.name, p.line, p.what) for p in found] == [("fuse", 4, "Fuse things."), ("decorated", 11, "")]
    assert user_passes("/w/p.py", "def broken(:\n") == []
    assert "fuse-linear-relu" in BUILTIN_NAMES


def _report() -> PassReport:
    return PassReport(
        "fuse-linear-relu",
        "builtin",
        "TinyNet",
        "/w/model.py",
        ok=True,
        counts_before={"placeholder": 1, "call_module": 2, "call_function": 1, "output": 1},
        counts_after={"placeholder": 1, "call_module": 2, "output": 1},
        nodes_before=[
            Node("x", "placeholder", "x", 1, ["fc1"]),
            Node("fc1", "call_module", "fc1", 1, ["relu"]),
            Node("relu", "call_function", "torch.relu", 1, ["fc2"]),
        ],
        nodes_after=[
            Node("x", "placeholder", "x", 1, ["fc1_relu"]),
            Node("fc1_relu", "call_module", "fc1_relu", 1, ["fc2"]),
        ],
        changes=[
            NodeChange("removed", "fc1", "call_module", "fc1"),
            NodeChange("removed", "relu", "call_function", "torch.relu"),
            NodeChange(
                "added",
                "fc1_relu",
                "call_module",
                "fc1_relu",
                replaces=["fc1", "relu"],
                how="from_node",
                line=13,
                col=35,
                end_line=13,
                end_col=46,
            ),
        ],
        proof=Proof(
            "equal",
            draws=3,
            outputs=[OutputCheck(0, "", True, 0.0)],
            converted=Proof("quantized", outputs=[OutputCheck(0, "", False, 0.01, 30.0)]),
        ),
    )


def test_json_round_trip_keeps_everything():
    report = _report()
    data = json.loads(json.dumps(pass_to_json(report)))
    assert data["schema"] == 1 and data["changes"][2]["replaces"] == ["fc1", "relu"]
    again = pass_from_json(data)
    assert again == report and again.proof.converted.outputs[0].sqnr_db == 30.0
    assert (again.total_before, again.total_after) == (5, 4)


def test_the_graph_marks_added_and_removed_nodes():
    graph = pass_graph(_report())
    assert {n["id"]: n["change"] for n in graph["nodes"]} == {
        "x": None,
        "fc1_relu": "added",
        "fc1": "removed",
        "relu": "removed",
    }
    payload = pass_payload("file:///w/model.py", _report())
    assert payload["verdict"] == "equal" and "5 → 4 nodes" in payload["markdown"]
    assert "in place of `fc1`, `relu`" in payload["markdown"] and "After convert_fx (int8)" in payload["markdown"]


def test_a_node_inserted_after_another_is_not_said_to_replace_it():
    kept = NodeChange("added", "mul", "call_function", "torch.mul", took_users_of=["conv"], how="from_node", line=18)
    assert change_line(kept) == (
        "- added `mul`: call_function[torch.mul] (line 18), taking over the users of `conv` (node.meta['from_node'])"
    )
    both = NodeChange("added", "f", "call_module", "f", replaces=["bn"], took_users_of=["conv"], how="from_node")
    assert "in place of `bn`, taking over the users of `conv`" in change_line(both)


def test_a_changed_module_says_what_changed_and_is_marked_in_the_graph():
    folded = NodeChange(
        "changed", "conv", "call_module", "conv (Conv2d)", detail="module replaced: weight, bias changed", line=18
    )
    assert change_line(folded) == (
        "- changed `conv`: call_module[conv (Conv2d)] (line 18) — module replaced: weight, bias changed"
    )
    report = PassReport(
        "fold",
        "user",
        "ConvBlock",
        "/w/m.py",
        ok=True,
        nodes_before=[Node("conv", "call_module", "conv", 1), Node("bn", "call_module", "bn", 1)],
        nodes_after=[Node("conv", "call_module", "conv", 1)],
        changes=[folded, NodeChange("removed", "bn", "call_module", "bn")],
    )
    assert {n["id"]: n["change"] for n in pass_graph(report)["nodes"]} == {"conv": "changed", "bn": "removed"}
    assert pass_from_json(json.loads(json.dumps(pass_to_json(report)))).changes[0].detail == folded.detail


def test_a_pass_cannot_run_on_a_class_that_was_not_built():
    why = "fxlens cannot build Needs: `Needs.__init__` needs dim"
    failed = LevelResult("fx", False, diagnostics=[Diagnostic(5, 0, 5, 9, "error", "construction", why)])
    assert cannot_run_on(ClassReport("Needs", 5, 9, Build(how="unbuilt"), levels={"fx": failed})) == why
    assert cannot_run_on(ClassReport("Bare", 5, 9, Build(how="unbuilt"))) == "fxlens could not build Bare"
    assert cannot_run_on(ClassReport("Fine", 5, 9, Build(how="no-arguments"))) == ""

"""The torch-free side of passes: finding `# fxlens: pass` functions, the report's JSON, the preview."""
from __future__ import annotations

import json

from fxlens.pass_catalog import BUILTIN_NAMES, user_passes
from fxlens.pass_report import NodeChange, OutputCheck, PassReport, Proof, pass_from_json, pass_to_json
from fxlens.render.pass_view import pass_graph, pass_payload
from fxlens.report import Node

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
    return PassReport("fuse-linear-relu", "builtin", "TinyNet", "/w/model.py", ok=True,
                      counts_before={"placeholder": 1, "call_module": 2, "call_function": 1, "output": 1},
                      counts_after={"placeholder": 1, "call_module": 2, "output": 1},
                      nodes_before=[Node("x", "placeholder", "x", 1, ["fc1"]), Node("fc1", "call_module", "fc1", 1, ["relu"]),
                                    Node("relu", "call_function", "torch.relu", 1, ["fc2"])],
                      nodes_after=[Node("x", "placeholder", "x", 1, ["fc1_relu"]),
                                   Node("fc1_relu", "call_module", "fc1_relu", 1, ["fc2"])],
                      changes=[NodeChange("removed", "fc1", "call_module", "fc1"),
                               NodeChange("removed", "relu", "call_function", "torch.relu"),
                               NodeChange("added", "fc1_relu", "call_module", "fc1_relu", replaces=["fc1", "relu"],
                                          how="from_node", line=13, col=35, end_line=13, end_col=46)],
                      proof=Proof("equal", draws=3, outputs=[OutputCheck(0, "", True, 0.0)],
                                  converted=Proof("quantized", outputs=[OutputCheck(0, "", False, 0.01, 30.0)])))


def test_json_round_trip_keeps_everything():
    report = _report()
    data = json.loads(json.dumps(pass_to_json(report)))
    assert data["schema"] == 1 and data["changes"][2]["replaces"] == ["fc1", "relu"]
    again = pass_from_json(data)
    assert again == report and again.proof.converted.outputs[0].sqnr_db == 30.0
    assert (again.total_before, again.total_after) == (5, 4)


def test_the_graph_marks_added_and_removed_nodes():
    graph = pass_graph(_report())
    assert {n["id"]: n["change"] for n in graph["nodes"]} == {"x": None, "fc1_relu": "added", "fc1": "removed",
                                                              "relu": "removed"}
    payload = pass_payload("file:///w/model.py", _report())
    assert payload["verdict"] == "equal" and "5 → 4 nodes" in payload["markdown"]
    assert "in place of `fc1`, `relu`" in payload["markdown"] and "After convert_fx (int8)" in payload["markdown"]

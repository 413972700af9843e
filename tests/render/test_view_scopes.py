"""The graph view's groups for levels whose nodes carry no module scope (dynamo, backward's gradients),
the lifted parameters' names, and byte counts in readable units (render/view_scopes, units)."""

from __future__ import annotations

from fxlens.render.graph_view import graph_payload
from fxlens.render.view_scopes import lifted_path
from fxlens.report import Build, ClassReport, InputSpec, LevelResult, Node
from fxlens.units import bytes_text

SCOPES = {
    "h.0": {"class": "Block", "line": 20},
    "h.0.attn": {"class": "Attn", "line": 12},
    "h.0.attn.qkv": {"class": "Linear", "line": 8},
    "h.1": {"class": "Block", "line": 20},
    "h.1.attn": {"class": "Attn", "line": 12},
    "h.1.attn.qkv": {"class": "Linear", "line": 8},
}
W0 = "L_self_modules_h_modules_0_modules_attn_modules_qkv_parameters_weight_"
W1 = "L_self_modules_h_modules_1_modules_attn_modules_qkv_parameters_weight_"


def _dynamo() -> ClassReport:
    nodes = [
        Node("l_x_", "placeholder", "L_x_", 1, ["linear"]),
        Node(W0.lower(), "placeholder", W0, 1, ["linear"]),
        Node(W1.lower(), "placeholder", W1, 1, ["linear_1"]),
        Node("linear", "call_function", "torch._C._nn.linear", 1, ["split"], line=8, function="Attn.forward"),
        Node("split", "call_method", "split", 1, ["add"], line=9, function="Attn.forward"),
        Node("add", "call_function", "operator.add", 1, ["linear_1"], line=21, function="Block.forward"),
        Node("linear_1", "call_function", "torch._C._nn.linear", 1, ["output"], line=8, function="Attn.forward"),
        Node("output", "output", "output", 0, []),
    ]
    fx = LevelResult("fx", True, [], scopes=SCOPES)
    return ClassReport(
        "Net",
        1,
        30,
        Build(inputs=[InputSpec("x", [2, 8], "float32")]),
        levels={"fx": fx, "dynamo": LevelResult("dynamo", True, nodes)},
    )


def test_lifted_parameters_are_named_by_their_module_path():
    assert lifted_path(W0) == "h.0.attn.qkv.weight"
    assert lifted_path("L_self_modules_transformer_modules_wte_parameters_weight_") == "transformer.wte.weight"
    assert lifted_path("L_self_buffers_mask_") == "mask"
    assert lifted_path("L_x_") is None
    payload = graph_payload("file:///n.py", _dynamo(), "dynamo")
    weight = next(n for n in payload["graph"]["nodes"] if n["id"] == W0.lower())
    # the box's first line is the path a person knows, not dynamo's mangled name
    assert weight["label"].split("\n")[0] == "h.0.attn.qkv.weight"
    assert weight["scope"] == "h.0.attn.qkv"


def test_dynamo_nodes_get_the_instance_they_ran_in():
    nodes = {n["id"]: n for n in graph_payload("file:///n.py", _dynamo(), "dynamo")["graph"]["nodes"]}
    # a linear inside Attn.forward reading h.0's weight ran in h.0.attn; the split after it too
    assert nodes["linear"]["scope"] == "h.0.attn"
    assert nodes["split"]["scope"] == "h.0.attn"
    # Block.forward's add, after h.0.attn: the Block around it
    assert nodes["add"]["scope"] == "h.0"
    assert nodes["linear_1"]["scope"] == "h.1.attn"
    assert nodes["l_x_"]["scope"] == "" and nodes["output"]["scope"] == ""


def test_other_levels_keep_their_own_scopes():
    cls = _dynamo()
    cls.levels["aten"] = LevelResult(
        "aten", True, [Node("linear", "call_function", "aten.linear.default", 0, [], line=8, function="Attn.forward")]
    )
    assert graph_payload("file:///n.py", cls, "aten")["graph"]["nodes"][0]["scope"] == ""


def test_bytes_read_in_three_significant_digits():
    assert [
        bytes_text(n) for n in (0, 448, 999, 1000, 2775, 1024**2 * 3.14159, 503_894_323, 1023.7 * 1024, 1.2 * 1024**3)
    ] == ["0 B", "448 B", "999 B", "0.977 KB", "2.71 KB", "3.14 MB", "481 MB", "1.00 MB", "1.20 GB"]


def test_a_saved_value_named_alike_in_both_graphs_is_one_node():
    forward = [
        Node("x", "placeholder", "x", 1, ["mm"], phase="forward"),
        Node(
            "mm",
            "call_function",
            "aten.mm.default",
            2,
            ["output", "mm_1"],
            phase="forward",
            saved=True,
            line=8,
            function="Attn.forward",
            scope="h.0.attn",
        ),
    ]
    backward = [
        Node("mm", "placeholder", "mm", 1, ["mm_1"], phase="backward"),
        Node("mm_1", "call_function", "aten.mm.default", 1, [], phase="backward", line=8, function="Attn.forward"),
    ]
    cls = ClassReport(
        "Net",
        1,
        30,
        Build(inputs=[InputSpec("x", [2, 8], "float32")]),
        levels={
            "fx": LevelResult("fx", True, [], scopes=SCOPES),
            "backward": LevelResult("backward", True, forward + backward),
        },
    )
    graph = graph_payload("file:///n.py", cls, "backward")["graph"]
    assert [n["id"] for n in graph["nodes"]] == ["x", "mm", "mm_1"]
    assert graph["nodes"][1]["phase"] == "forward"
    assert {"source": "mm", "target": "mm_1"} in graph["edges"]
    # the gradient took the instance of the saved value it reads
    assert graph["nodes"][2]["scope"] == "h.0.attn"


def test_a_norm_whose_first_ops_read_only_the_stream_and_a_helper_function_find_their_instance():
    norm_w = "L_self_modules_h_modules_0_modules_norm_parameters_weight_"
    nodes = [
        Node("l_x_", "placeholder", "L_x_", 1, ["pow_1"]),
        Node(norm_w.lower(), "placeholder", norm_w, 1, ["mul"]),
        Node("pow_1", "call_method", "pow", 1, ["mul"], line=5, function="Norm.forward"),
        Node("mul", "call_function", "operator.mul", 1, ["rotate"], line=6, function="Norm.forward"),
        Node("rotate", "call_function", "torch.cat", 1, ["output"], line=2, function="rotate_half"),
        Node("output", "output", "output", 0, []),
    ]
    scopes = {**SCOPES, "h.0.norm": {"class": "Norm", "line": 14}}
    cls = ClassReport(
        "Net",
        1,
        30,
        Build(inputs=[InputSpec("x", [2, 8], "float32")]),
        levels={"fx": LevelResult("fx", True, [], scopes=scopes), "dynamo": LevelResult("dynamo", True, nodes)},
    )
    got = {n["id"]: n["scope"] for n in graph_payload("file:///n.py", cls, "dynamo")["graph"]["nodes"]}
    assert got["mul"] == "h.0.norm"  # reads the norm's weight
    assert got["pow_1"] == "h.0.norm"  # reads only x: found from its user
    assert got["rotate"] == "h.0.norm"  # a helper, called from there

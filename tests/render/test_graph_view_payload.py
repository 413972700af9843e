"""The graph view's payload (render/graph_view.graph_payload): what the page draws groups, the level
switcher and the details pane from."""

from __future__ import annotations

from fxlens.render.graph_view import graph_payload
from fxlens.report import LEVELS, Build, ClassReport, InputSpec, LevelResult, Node


def _cls() -> ClassReport:
    fx = LevelResult(
        "fx",
        True,
        [
            Node("x", "placeholder", "x", 1, ["attn_proj"]),
            Node(
                "attn_proj",
                "call_module",
                "attn.proj",
                1,
                ["output"],
                scope="attn",
                line=9,
                function="Attn.forward",
                text="%attn_proj : ...",
            ),
        ],
        scopes={"attn": {"class": "Attn", "line": 20, "col": 8, "end_line": 20, "end_col": 20}},
    )
    aten = LevelResult(
        "aten",
        True,
        [
            Node("p_attn_proj_weight", "placeholder", "p_attn_proj_weight", 1, ["linear"]),
            Node("linear", "call_function", "aten.linear.default", 1, [], scope="attn", flops=128, overload="default"),
        ],
        schemas={
            "aten.linear.default": {"schema": "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"}
        },
    )
    return ClassReport("Net", 1, 30, Build(inputs=[InputSpec("x", [2, 8], "float32")]), levels={"fx": fx, "aten": aten})


def test_every_level_is_offered_with_whether_it_is_traced():
    payload = graph_payload("file:///n.py", _cls(), "fx")
    assert [level["name"] for level in payload["level_info"]] == list(LEVELS)
    assert {level["name"]: level["traced"] for level in payload["level_info"]}["core-aten"] is False
    assert payload["levels"] == ["fx", "aten"]


def test_groups_read_the_fx_level_scopes_at_every_level():
    cls = _cls()
    assert graph_payload("file:///n.py", cls, "fx")["scopes"]["attn"]["class"] == "Attn"
    aten = graph_payload("file:///n.py", cls, "aten")
    assert aten["scopes"]["attn"]["line"] == 20
    assert aten["inputs"] == ["x"]  # the lifted parameter p_attn_proj_weight is not the forward's input
    linear = next(n for n in aten["graph"]["nodes"] if n["id"] == "linear")
    assert (linear["flops"], linear["overload"]) == (128, "default")
    assert aten["schemas"]["aten.linear.default"]["schema"].startswith("aten::linear(")


def test_node_details_pass_through():
    fx = graph_payload("file:///n.py", _cls(), "fx")
    drawn = next(n for n in fx["graph"]["nodes"] if n["id"] == "attn_proj")
    assert (drawn["function"], drawn["text"]) == ("Attn.forward", "%attn_proj : ...")

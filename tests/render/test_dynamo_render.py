"""The dynamo level as the server sees it: its lens title, its graphs printed in turn, the setting."""

from fxlens.lsp.settings import parse_settings
from fxlens.render.graph_text import node_table, printout
from fxlens.render.lens import level_title
from fxlens.report import DEFAULT_LEVELS, LEVELS, Diagnostic, LevelResult, Node


def _gate() -> LevelResult:
    """`if y.sum() > 0:` between two graphs, as dynamo captures it."""
    nodes = [
        Node("l_x_", "placeholder", "L_x_", 1, text="%l_x_ : [num_users=1] = placeholder[target=L_x_]", graph=0),
        Node("gt", "call_function", "operator.gt", 1, text="%gt : ...", line=15, graph=0),
        Node("output", "output", "output", 0, text="return (gt,)", graph=0),
        Node("l_y_", "placeholder", "L_y_", 1, text="%l_y_ : ...", graph=1),
        Node("relu", "call_function", "torch.relu", 1, text="%relu : ...", line=17, graph=1),
        Node("output", "output", "output", 0, text="return (relu,)", graph=1),
    ]
    warning = Diagnostic(
        15,
        11,
        15,
        22,
        "warning",
        "graph-break",
        "torch.compile graph break: Data-dependent branching [GB0170]",
        level="dynamo",
        gb_id="GB0170",
        hints=["Use `torch.cond`."],
    )
    return LevelResult("dynamo", True, nodes, [warning], graphs=2, breaks=1)


def test_lens_counts_graphs_and_breaks():
    assert level_title("dynamo", _gate()) == "dynamo: 2 graphs, 1 break"
    whole = LevelResult("dynamo", True, _gate().nodes[:3], graphs=1, breaks=0)
    assert level_title("dynamo", whole) == "dynamo: 1 graph, fullgraph ok"
    three = LevelResult("dynamo", True, [], graphs=3, breaks=2)
    assert level_title("dynamo", three) == "dynamo: 3 graphs, 2 breaks"


def test_each_graph_is_printed_in_turn_with_its_index_in_the_table():
    text = printout(_gate())
    assert text.count("graph():") == 2 and "# graph 1 of 2" in text
    assert text.index("return (gt,)") < text.index("# graph 1 of 2") < text.index("%relu")
    table = node_table(_gate()).splitlines()
    assert table[0].split()[:2] == ["graph", "node"] and table[-2].split()[:2] == ["1", "relu"]


def test_dynamo_is_an_opt_in_level():
    assert "dynamo" in LEVELS and "dynamo" not in DEFAULT_LEVELS
    settings, warnings = parse_settings({"fxlens": {"levels": ["dynamo", "fx"]}})
    assert warnings == [] and settings.levels == ("fx", "dynamo")


def test_class_hover_says_how_many_graphs_torch_compile_makes():
    from fxlens.render.hover import hover_text
    from fxlens.report import ClassReport, FileReport

    cls = ClassReport("Gate", 8, 18, levels={"dynamo": _gate()})
    text = hover_text(FileReport("/x/gate.py", [cls]), 8, 6) or ""
    assert "dynamo: 2 graphs, 1 break" in text

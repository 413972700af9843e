"""The level ladder as the server sees it: the description in report.py, lens titles and folded hover lines."""

from fxlens.lsp.settings import parse_settings
from fxlens.render.hover import hover_text
from fxlens.render.lens import class_lenses
from fxlens.report import (
    DEFAULT_LEVELS,
    LEVELS,
    ClassReport,
    FileReport,
    LevelResult,
    Node,
    in_ladder_order,
    in_trace_order,
)


def _node(name, op, target, line, shape, users=(), scope=""):
    return Node(
        name,
        op,
        target,
        len(users),
        list(users),
        line=line,
        col=15,
        end_line=line,
        end_col=43,
        shape=list(shape),
        dtype="float32",
        scope=scope,
        function="Net.forward",
    )


def _net() -> FileReport:
    """The lesson's Net (`Linear(3, 4)` -> relu -> sum on a (2, 3) input) at three levels, forward on line 12."""
    x = Node("x", "placeholder", "x", 1, shape=[2, 3], dtype="float32")
    fx = [
        x,
        _node("fc", "call_module", "fc", 12, (2, 4), ["relu"], "fc"),
        _node("relu", "call_function", "torch.relu", 12, (2, 4), ["sum_1"]),
        _node("sum_1", "call_method", "sum", 12, ()),
    ]
    aten = [
        x,
        _node("linear", "call_function", "aten.linear.default", 12, (2, 4), ["relu"], "fc"),
        _node("relu", "call_function", "aten.relu.default", 12, (2, 4), ["sum_1"]),
        _node("sum_1", "call_function", "aten.sum.default", 12, ()),
    ]
    core = [
        x,
        _node("permute", "call_function", "aten.permute.default", 12, (3, 4), ["addmm"], "fc"),
        _node("addmm", "call_function", "aten.addmm.default", 12, (2, 4), ["relu"], "fc"),
        _node("relu", "call_function", "aten.relu.default", 12, (2, 4), ["sum_1"]),
        _node("sum_1", "call_function", "aten.sum.dim_IntList", 12, ()),
    ]
    cls = ClassReport(
        "Net",
        6,
        12,
        levels={
            "fx": LevelResult("fx", True, fx),
            "aten": LevelResult("aten", True, aten),
            "core-aten": LevelResult("core-aten", True, core),
        },
    )
    return FileReport("/x/net.py", [cls])


def test_the_settings_accept_every_described_level_in_ladder_order():
    # displayed as the lesson's ladder down to the kernels; traced cheap first, then what reuses the export,
    # then dynamo, then inductor, which compiles what dynamo captures
    assert LEVELS == ("fx", "dynamo", "aten", "core-aten", "backward", "inductor") and DEFAULT_LEVELS == ("fx", "aten")
    assert in_trace_order(LEVELS) == ("fx", "aten", "core-aten", "backward", "dynamo", "inductor")
    assert in_ladder_order(["backward", "aten", "dynamo", "fx"]) == ("fx", "dynamo", "aten", "backward")
    settings, warnings = parse_settings({"fxlens": {"levels": ["core-aten", "fx", "aten"]}})
    assert warnings == [] and settings.levels == ("fx", "aten", "core-aten")
    assert settings.trace_options().levels == ("fx", "aten", "core-aten")
    settings, warnings = parse_settings({"fxlens": {"levels": ["core_aten"]}})
    assert settings.levels == DEFAULT_LEVELS and "core-aten" in warnings[0]


def test_lens_counts_the_decomposed_nodes():
    titles = [t.title for t in class_lenses(_net().classes[0], ("fx", "aten", "core-aten"))]
    assert titles[1].endswith(" · aten 4 · core-aten 5")


def test_hover_folds_core_aten_into_one_line_after_the_fx_aten_table():
    text = hover_text(_net(), 12, 20)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert "core-aten" not in table[0] and len(table) == 2 + 3  # fx/aten columns only, one row per computation
    assert "core-aten: 4 nodes (permute, addmm, relu, sum)" in text.splitlines()
    assert text.index("core-aten:") > text.index(table[-1])

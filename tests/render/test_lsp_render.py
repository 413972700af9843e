"""Pure rendering from a recorded report (tests/fixtures/lsp/residual_mlp.report.json)."""

import json
from pathlib import Path

import pytest
from fxlens.render import nodes as q
from fxlens.render.graph_view import graph_document, graph_payload
from fxlens.render.hover import hover_text
from fxlens.render.inlay import inlay_hints
from fxlens.render.lens import class_lenses, level_title
from fxlens.report import Diagnostic, LevelResult, file_from_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"


@pytest.fixture
def report():
    return file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))


@pytest.fixture
def text():
    return (FIXTURES / "residual_mlp.py").read_text()


def test_lens_titles(report):
    residual, mlp = report.classes
    # the graph link first, then one short line: the lens row fits a 1400 px editor
    lenses = class_lenses(residual, ("fx", "aten"))
    assert [t.title for t in lenses] == ["Show graph", "fx 7 · aten 9"]
    # the breakdown is the summary's tooltip
    assert (
        lenses[1]
        .tooltip.splitlines()[0]
        .startswith("fx: 7 nodes (1 placeholder · 1 call_module · 1 get_attr · 3 call_function · 1 output) — ")
    )
    assert lenses[1].tooltip.splitlines()[1].startswith("aten: 9 nodes — ")
    assert [t.title for t in class_lenses(mlp, ("fx",), stale=True)][1] == "fx 15 (stale)"


def test_failing_level_title():
    failed = LevelResult(
        "fx", False, diagnostics=[Diagnostic(13, 8, 13, 20, "error", "data-dependent-control-flow", "m")]
    )
    assert level_title("fx", failed) == "fx: untraceable — line 13"
    unbuilt = LevelResult("aten", False, diagnostics=[Diagnostic(6, 0, 6, 9, "error", "construction", "m")])
    assert level_title("aten", unbuilt) == "aten: cannot build — line 6"
    assert level_title("fx", LevelResult("fx", False)) == "fx: untraceable"


def test_forward_line_hover_groups_instances_and_puts_the_cursor_first(report):
    text = hover_text(report, 13, 12)  # `self.fc(x)` in Residual.forward
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows[0] == "|  | fx | users | aten | users | value |"
    assert rows[2] == "| ▸ | `call_module fc` | 1 → L13 | `aten.linear.default` | 1 → L13 | (4, 16) f32 |"
    assert "| `get_attr shift` | 1 → L13 |  |  | (16,) f32 |" in text
    assert "also ×2 in ResidualMLP: blocks.0 … blocks.1 (same nodes)" in text
    assert text.count("call_module fc") == 1


def test_hover_of_a_parent_line_and_of_users_at_output(report):
    text = hover_text(report, 29, 15)
    assert "`call_method sum` | 1 → output" in text and "() f32" in text


def test_member_hover(report):
    text = hover_text(report, 10, 8)
    assert text.startswith("**self.shift** · buffer (16,) f32")
    assert "| fx | `get_attr shift` | 1 → L13 | L13 | (16,) f32 |" in text
    assert "| aten | `aten.add.Tensor` |" in text  # reads the lifted buffer b_shift


def test_class_hover(report):
    text = hover_text(report, 18, 0)
    assert "built: directive" in text and "| aten | 23 | 11 | 0 | 11 | 0 | 0 | 1 |" in text


def test_plaintext_hover_has_aligned_columns(report):
    text = hover_text(report, 14, 15, markdown=False)
    assert "**" not in text and "|" not in text and "`" not in text
    lines = text.splitlines()
    header = next(line for line in lines if "fx" in line and "aten" in line)
    relu = next(line for line in lines if "torch.relu" in line)
    assert header.index("aten") == relu.index("aten.relu.default")


def test_nothing_to_say_outside_classes(report):
    assert hover_text(report, 1, 0) is None
    assert hover_text(report, 4, 0) is None


def test_stale_hover_says_so(report):
    assert "stale" in hover_text(report, 13, 12, stale=True)


def test_instances_strip_leaf_modules(report):
    mlp = report.find_class("ResidualMLP")
    groups = q.instances(q.on_line(mlp.levels["aten"], 13), q.leaf_paths(mlp))
    assert [g.path for g in groups] == ["blocks.0", "blocks.1"]
    assert all(len(g.nodes) == 2 for g in groups)


def test_inlay_hints(report, text):
    hints = inlay_hints(report, text, 1, 40)
    assert [(h.line, h.label) for h in hints] == [(13, "(4, 16) f32"), (26, "(4, 16) f32")]
    assert hints[0].col == len(text.split("\n")[12].encode())
    assert inlay_hints(report, text + "\n(", 1, 40) == []  # mid-edit: no guesses


def test_graph_payload_contract(report):
    residual = report.find_class("Residual")
    payload = graph_payload("file:///x.py", residual, "aten")
    assert payload["ok"] and payload["levels"] == ["fx", "aten"] and payload["class"] == "Residual"
    assert payload["printout"].startswith("graph():") and "aten.relu.default" in payload["table"]
    assert {"source": "relu", "target": "add_1"} in payload["graph"]["edges"]
    node = next(n for n in payload["graph"]["nodes"] if n["id"] == "linear")
    assert set(node) >= {"id", "op", "target", "shape", "dtype", "label", "line", "col", "end_line", "end_col", "scope"}
    missing = graph_payload("file:///x.py", residual, "dynamo")
    assert missing["ok"] is False and "dynamo" in missing["message"] and missing["graph"] == {"nodes": [], "edges": []}
    assert graph_payload("file:///x.py", None, "fx", "nothing")["message"] == "nothing"
    assert "== Residual (fx)" in graph_document("x.py", residual, "fx")


def _node(name, op, target, line, col, end_col, shape=(2, 8), scope="", users=()):
    from fxlens.report import Node

    return Node(
        name,
        op,
        target,
        len(users),
        list(users),
        line=line,
        col=col,
        end_line=line,
        end_col=end_col,
        shape=list(shape),
        dtype="float32",
        scope=scope,
        function="Gate.forward",
    )


def _one_class_report(fx_nodes, aten_nodes, diagnostics=(), level_ok=True):
    from fxlens.report import ClassReport, FileReport

    cls = ClassReport(
        "Gate",
        5,
        12,
        levels={
            "fx": LevelResult("fx", level_ok, fx_nodes, list(diagnostics)),
            "aten": LevelResult("aten", True, aten_nodes),
        },
    )
    return FileReport("/x/gate.py", [cls])


def _rows(text):
    return [line for line in text.splitlines() if line.startswith("|")][2:]


def test_hover_pairs_levels_only_for_the_same_computation():
    # line 9: `y = self.proj(x) * 2 + x`: fx says mul then add; aten runs linear, mul, add
    fx = [
        _node("proj", "call_module", "proj", 9, 12, 24, scope="proj"),
        _node("mul", "call_function", "operator.mul", 9, 12, 28),
        _node("add", "call_function", "operator.add", 9, 12, 32),
    ]
    aten = [
        _node("linear", "call_function", "aten.linear.default", 9, 8, 32, scope="proj"),
        _node("mul", "call_function", "aten.mul.Tensor", 9, 8, 32),
        _node("add", "call_function", "aten.add.Tensor", 9, 8, 32),
    ]
    rows = _rows(hover_text(_one_class_report(fx, aten), 9, 30))
    assert [r.split("|")[2].strip() + " / " + r.split("|")[4].strip() for r in rows] == [
        "`call_function operator.add` / `aten.add.Tensor`",  # under the cursor: first
        "`call_module proj` / `aten.linear.default`",
        "`call_function operator.mul` / `aten.mul.Tensor`",
    ]


def test_hover_lists_unrelated_nodes_of_the_two_levels_on_rows_of_their_own():
    # fx records `x * w` (a mul); aten's decomposition of the same line gives an add: not one computation
    fx = [_node("mul", "call_function", "operator.mul", 9, 12, 20)]
    aten = [_node("add", "call_function", "aten.add.Tensor", 9, 8, 20)]
    rows = _rows(hover_text(_one_class_report(fx, aten), 9, 14))
    assert len(rows) == 2
    assert "operator.mul" in rows[0] and "aten." not in rows[0]
    assert "aten.add.Tensor" in rows[1] and "operator" not in rows[1]
    # the same op from another line is not the same computation either
    moved = [_node("mul", "call_function", "aten.mul.Tensor", 10, 8, 20)]
    assert q.pair_levels(fx, moved) == [(fx[0], None), (None, moved[0])]


def test_hovering_a_failing_line_shows_the_failure_and_its_fix_without_nodes():
    failure = Diagnostic(
        8,
        12,
        8,
        30,
        "error",
        "map-over-proxy",
        "TraceError: Proxy object cannot be iterated.",
        "A tuple is one graph value while tracing.",
        "Unpack into names first: `q, k, v = qkv`.",
        level="fx",
        class_name="Gate",
    )
    text = hover_text(_one_class_report([], [], [failure], level_ok=False), 8, 14)
    assert text is not None
    assert "**fx: fails here** in Gate · `map-over-proxy`" in text
    assert "```text\nTraceError: Proxy object cannot be iterated.\n```" in text
    assert "why: A tuple is one graph value while tracing." in text and "fix: Unpack into names first" in text
    plain = hover_text(_one_class_report([], [], [failure], level_ok=False), 8, 14, markdown=False)
    assert "```" not in plain and "TraceError: Proxy object cannot be iterated." in plain


def test_a_failure_both_levels_share_is_shown_once_with_both_levels():
    from fxlens.report import ClassReport, FileReport

    diagnostics = {
        level: Diagnostic(
            7,
            4,
            9,
            20,
            "error",
            "decorated-forward",
            "ValueError: code: co_varnames is too small",
            "A decorator replaced forward's code.",
            "Use the aten level.",
            level=level,
            class_name="Gate",
        )
        for level in ("fx", "aten")
    }
    cls = ClassReport(
        "Gate", 5, 12, levels={level: LevelResult(level, False, [], [d]) for level, d in diagnostics.items()}
    )
    text = hover_text(FileReport("/x/gate.py", [cls]), 8, 4)
    assert text.count("co_varnames is too small") == 1
    assert "**fx and aten cannot trace this decorated forward** in Gate · `decorated-forward`" in text
    assert "**fx, aten:**" in text

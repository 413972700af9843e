"""Hovers on overload families and FLOPs: the schema of the overload a node calls, its siblings, and the
FLOPs of a line and of the class at the example size (the worker's side is tests/worker/levels/test_overloads.py)."""

from fxlens.render.cost import flops_text
from fxlens.render.hover import hover_text
from fxlens.report import Build, ClassReport, FileReport, InputSpec, LevelResult, Node, file_from_json, to_json

# as torch 2.13 prints them (str(op._schema), op.overloadpacket.overloads())
SUM_DIM = "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
SUM_OVERLOADS = [
    "dim_IntList",
    "default",
    "IntList_out",
    "out",
    "int",
    "float",
    "complex",
    "bool",
    "dim_DimnameList",
    "DimnameList_out",
]
SCHEMAS = {
    "aten.permute.default": {
        "schema": "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)",
        "overloads": ["default"],
    },
    "aten.addmm.default": {
        "schema": "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        "overloads": ["default", "out", "dtype"],
    },
    "aten.relu.default": {"schema": "aten::relu(Tensor self) -> Tensor", "overloads": ["default", "out"]},
    "aten.sum.dim_IntList": {"schema": SUM_DIM, "overloads": SUM_OVERLOADS},
}


def _node(name, target, line, shape, flops, overload="default", users=()):
    return Node(
        name,
        "call_function",
        target,
        len(users),
        list(users),
        line=line,
        col=8,
        end_line=line,
        end_col=40,
        shape=list(shape),
        dtype="float32",
        function="Net.forward",
        overload=overload,
        flops=flops,
    )


def _net(sizes=None) -> FileReport:
    """The lesson's Net at core-aten alone: the linear on line 11, relu and sum on line 12."""
    x = Node("x", "placeholder", "x", 1, shape=[2, 3], dtype="float32")
    core = [
        x,
        _node("permute", "aten.permute.default", 11, (3, 4), 0, users=["addmm"]),
        _node("addmm", "aten.addmm.default", 11, (2, 4), 48, users=["relu"]),
        _node("relu", "aten.relu.default", 12, (2, 4), 0, users=["sum_1"]),
        _node("sum_1", "aten.sum.dim_IntList", 12, (), 0, overload="dim_IntList"),
    ]
    build = Build("directive", "directive", [InputSpec("x", [2, 3], "float32")], sizes=sizes or {})
    levels = {"core-aten": LevelResult("core-aten", True, core, schemas=SCHEMAS)}
    return FileReport("/x/net.py", [ClassReport("Net", 6, 12, build=build, levels=levels)])


def test_hover_shows_the_schema_of_the_overload_and_its_siblings():
    text = hover_text(_net(), 12, 10)
    assert f"`{SUM_DIM}`" in text
    assert (
        "`sum` has 10 overloads: **dim_IntList**, default, IntList_out, out, int, float, complex, bool, … 2 more"
    ) in text
    assert "`relu` has 2 overloads: **default**, out; the overload pins the kernel" in text
    assert "addmm" not in text.split("core-aten:")[1]  # another line's overloads are not this line's


def test_plain_text_hover_has_no_markdown_in_the_schema_lines():
    text = hover_text(_net(), 12, 10, markdown=False)
    assert SUM_DIM in text.splitlines()
    assert "sum has 10 overloads: dim_IntList, default," in text


def test_line_flops_name_the_example_size():
    assert "≈ 48 FLOP at the example size (x: (2, 3))" in hover_text(_net(), 11, 10)
    assert "FLOP" not in hover_text(_net(), 12, 10)  # relu and sum: FlopCounterMode counts them as 0
    assert "≈ 48 FLOP at the example size (B=2)" in hover_text(_net({"B": 2}), 11, 10)


def test_class_hover_totals_the_forward_flops():
    assert "≈ 48 FLOP forward at the example size (x: (2, 3))" in hover_text(_net(), 6, 0)


def test_a_line_of_many_overloads_names_only_the_first_few():
    report = _net()
    nodes = report.classes[0].levels["core-aten"].nodes
    for node in nodes[1:3]:
        node.line = node.end_line = 12
    text = hover_text(report, 12, 10)
    assert "… 1 more overloads on this line" in text and text.count(" overloads: ") + text.count(" overload: ") == 3


def test_schemas_and_flops_survive_the_trip_to_the_server():
    back = file_from_json(to_json(_net({"B": 2})))
    level = back.classes[0].levels["core-aten"]
    assert level.schemas == SCHEMAS and [n.flops for n in level.nodes] == [None, 0, 48, 0, 0]
    assert back.classes[0].build.sizes == {"B": 2}


def test_flops_are_written_with_decimal_prefixes():
    assert [flops_text(n) for n in (48, 1_234_567, 2.5e9, 7e12)] == ["48 FLOP", "1.2 MFLOP", "2.5 GFLOP", "7.0 TFLOP"]


def test_saved_for_backward_speaks_the_editor_s_words_and_reads_a_backward_level_computed_later():
    from fxlens.render.cost import class_cost_lines
    from fxlens.report import Cost

    cls = ClassReport("Net", 5, 12, cost=Cost(parameters=16, trainable=16, forward_flops=96, backward_flops=192))
    (editor,) = [t for t in class_cost_lines(cls) if t.startswith("saved for backward")]
    assert "`fxlens.levels` setting" in editor and "--level" not in editor
    (cli,) = [t for t in class_cost_lines(cls, "cli") if t.startswith("saved for backward")]
    assert cli.endswith("(add `--level backward`)")
    # the backward level came on demand (a hover), after the cost was counted: what it saves is shown
    saved = Node("relu", "call_function", "aten.relu.default", 1, saved=True, bytes=24)
    cls.levels["backward"] = LevelResult("backward", True, [saved, Node("mm", "call_function", "aten.mm.default", 0)])
    lines = class_cost_lines(cls)
    assert "saves 24 B for backward (1 value, torch.compile's min-cut partition) at the example size" in lines[2]
    assert not any(t.startswith("saved for backward") for t in lines)

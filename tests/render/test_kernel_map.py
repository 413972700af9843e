"""Inductor's provenance as report nodes (worker/levels/kernel_map.py) and their rendering (render/kernels.py),
on data shaped as torch 2.13 gives it for a two-Linear MLP (see FACTS.md): no torch, no compile."""

from __future__ import annotations

from fxlens.render.graph_view import graph_payload
from fxlens.render.hover import hover_text
from fxlens.render.kernels import counts_text, kernel_of_nodes, ranges
from fxlens.render.lens import class_lenses, level_title
from fxlens.report import ClassReport, FileReport, LevelResult, Node
from fxlens.worker.levels.kernel_map import Compiled, kernel_name, kind_of, map_kernels

PATH = "/w/mlp.py"
SOURCE = [
    "import torch",
    "",
    "class MLP(torch.nn.Module):",
    "    def forward(self, x):",
    "        y = torch.relu(self.a(x))",
    "        z = torch.sigmoid(y) * y + 1",
    "        return torch.softmax(self.b(z), -1)",
]
# inductor's wrapper as it writes it: each call on one line, as map_kernels reads it
WRAPPER = """from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()


cpp_fused_add_mul_relu_sigmoid_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)
{
}
\'\'\')


cpp_fused__softmax_1 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)
{
}
\'\'\')


class Runner:
    def call(self, args):
        primals_1, primals_2, primals_3, primals_4, primals_5 = args
        buf0 = empty_strided_cpu((4, 16), (16, 1), torch.float32)
        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
        # [Provenance debug handles] extern_kernels.addmm:1
        extern_kernels.addmm(primals_2, primals_3, reinterpret_tensor(primals_1, (8, 16), (1, 8), 0), alpha=1, beta=1, out=buf0)
        buf1 = empty_strided_cpu((4, 16), (16, 1), torch.float32)
        # [Provenance debug handles] cpp_fused_add_mul_relu_sigmoid_0:2
        cpp_fused_add_mul_relu_sigmoid_0(buf0, buf1)
        buf2 = empty_strided_cpu((4, 4), (4, 1), torch.float32)
        # Topologically Sorted Source Nodes: [linear_1], Original ATen: [aten.t, aten.addmm]
        # [Provenance debug handles] extern_kernels.addmm:3
        extern_kernels.addmm(primals_5, buf1, reinterpret_tensor(primals_4, (16, 4), (1, 16), 0), alpha=1, beta=1, out=buf2)
        # [Provenance debug handles] cpp_fused__softmax_1:4
        cpp_fused__softmax_1(buf2, buf3)
        return (buf3, )
"""  # noqa: E501


def _trace(line: int) -> str:
    return f'  File "{PATH}", line {line}, in forward\n    {SOURCE[line - 1].strip()}\n'


def _compiled() -> Compiled:
    post = {
        "permute": ("aten.permute.default", ["primals_1"], 5),
        "addmm": ("aten.addmm.default", ["permute"], 5),
        "relu": ("aten.relu.default", ["addmm"], 5),
        "sigmoid": ("aten.sigmoid.default", ["relu"], 6),
        "mul": ("aten.mul.Tensor", ["sigmoid", "relu"], 6),
        "add": ("aten.add.Tensor", ["mul"], 6),
        "permute_1": ("aten.permute.default", ["primals_4"], 7),
        "addmm_1": ("aten.addmm.default", ["add", "permute_1"], 7),
        "amax": ("aten.amax.default", ["addmm_1"], 7),
        "sub": ("aten.sub.Tensor", ["addmm_1", "amax"], 7),
        "exp": ("aten.exp.default", ["sub"], 7),
        "sum_1": ("aten.sum.dim_IntList", ["exp"], 7),
        "div": ("aten.div.Tensor", ["exp", "sum_1"], 7),
    }
    to_pre = {
        "permute": ["linear"],
        "addmm": ["linear"],
        "relu": ["y"],
        "sigmoid": ["sigmoid"],
        "mul": ["mul"],
        "add": ["z"],
        "permute_1": ["linear_1"],
        "addmm_1": ["linear_1"],
        "amax": ["softmax"],
        "sub": ["softmax"],
        "exp": ["softmax"],
        "sum_1": ["softmax"],
        "div": ["softmax"],
    }
    pre_lines = {"linear": 5, "y": 5, "sigmoid": 6, "mul": 6, "z": 6, "linear_1": 7, "softmax": 7}
    return Compiled(
        code=WRAPPER,
        mappings={
            "postToPre": to_pre,
            "cppCodeToPost": {
                "extern_kernels.addmm:1": ["addmm"],
                "cpp_fused_add_mul_relu_sigmoid_0:2": ["add", "mul", "sigmoid", "relu"],
                "extern_kernels.addmm:3": ["addmm_1"],
                "cpp_fused__softmax_1:4": ["exp", "sub", "amax", "div", "sum_1"],
            },
        },
        post={
            name: {"target": target, "inputs": inputs, "stack_trace": _trace(line)}
            for name, (target, inputs, line) in post.items()
        },
        pre={name: {"stack_trace": _trace(line)} for name, line in pre_lines.items()},
        extern={"extern_kernels.addmm:1": "extern", "extern_kernels.addmm:3": "extern"},
    )


def _locate(trace: str):
    line = int(trace.split("line ")[1].split(",")[0])
    return "forward", line


def _level(compiled: list[Compiled]) -> LevelResult:
    nodes, code = map_kernels(compiled, _locate, SOURCE)
    return LevelResult("inductor", True, nodes, code=code, graphs=len(compiled))


def test_kernels_are_nodes_in_call_order_with_their_kind_ops_lines_and_code():
    result = _level([_compiled()])
    assert [n.name for n in result.nodes] == [
        "extern_kernels.addmm:1",
        "cpp_fused_add_mul_relu_sigmoid_0:2",
        "extern_kernels.addmm:3",
        "cpp_fused__softmax_1:4",
    ]
    fused = result.nodes[1]
    assert (fused.op, fused.target, fused.kernel["kind"]) == (
        "call_function",
        "cpp_fused_add_mul_relu_sigmoid_0",
        "fused",
    )
    # the post-grad nodes in graph order, with their ops, lines and the pre-grad nodes they come from
    assert [(p["name"], p["target"], p["line"], p["pre"]) for p in fused.kernel["post"]] == [
        ("relu", "aten.relu.default", 5, ["y"]),
        ("sigmoid", "aten.sigmoid.default", 6, ["sigmoid"]),
        ("mul", "aten.mul.Tensor", 6, ["mul"]),
        ("add", "aten.add.Tensor", 6, ["z"]),
    ]
    assert (
        fused.kernel["lines"] == [5, 6]
        and fused.line == 5
        and fused.text == "cpp_fused_add_mul_relu_sigmoid_0(buf0, buf1)"
    )
    lines = result.code.split("\n")
    assert lines[fused.kernel["code_line"] - 1].startswith("cpp_fused_add_mul_relu_sigmoid_0 = async_compile.")
    assert fused.kernel["code"].startswith("#include <torch/csrc/inductor/cpp_prefix.h>") and fused.kernel[
        "code"
    ].endswith("}")
    extern = result.nodes[0]
    assert extern.kernel["kind"] == "extern" and extern.kernel["code"].startswith("extern_kernels.addmm(primals_2")
    assert (extern.kernel["source_nodes"], extern.kernel["original_aten"]) == (["linear"], ["aten.t", "aten.addmm"])
    assert lines[extern.kernel["code_line"] - 1].strip() == extern.kernel["code"]
    # who reads whose results: through the view (permute_1) too
    assert [n.users for n in result.nodes] == [
        ["cpp_fused_add_mul_relu_sigmoid_0:2"],
        ["extern_kernels.addmm:3"],
        ["cpp_fused__softmax_1:4"],
        [],
    ]


def test_kinds_by_inductors_ir_class_else_by_name():
    assert (
        kind_of(
            "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:3",
            {"torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:3": "fallback"},
        )
        == "fallback"
    )
    assert kind_of("extern_kernels.bmm:5", {}) == "extern" and kind_of("triton_poi_fused_relu_0:1", {}) == "fused"
    assert kernel_name("cpp_fused_relu_0:12") == "cpp_fused_relu_0" and kernel_name("weird") == "weird"


def test_a_graph_break_numbers_the_graphs_and_keeps_each_kernels_code_line():
    result = _level([_compiled(), _compiled()])
    second = [n for n in result.nodes if n.graph == 1]
    assert [n.name for n in second][:1] == ["extern_kernels.addmm:1/g1"] and second[1].users == [
        "extern_kernels.addmm:3/g1"
    ]
    lines = result.code.split("\n")
    assert lines[0] == "# graph 0 of 2" and "# graph 1 of 2" in lines
    for node in result.nodes:
        assert node.kernel["code"].split("\n")[0] in lines[node.kernel["code_line"] - 1] or lines[
            node.kernel["code_line"] - 1
        ].startswith(node.target + " = async_compile.")
    assert counts_text(result) == "8 kernels (4 fused, 4 extern) in 2 graphs"


def _class(result: LevelResult, *others: LevelResult) -> ClassReport:
    return ClassReport("MLP", 3, 7, levels={"inductor": result, **{o.level: o for o in others}})


def test_the_lens_and_the_hover_say_each_lines_kernels_and_what_they_fuse():
    result = _level([_compiled()])
    cls = _class(result)
    assert level_title("inductor", result) == "inductor: 4 kernels (2 fused, 2 extern)"
    assert class_lenses(cls, ("inductor",))[1].title == "inductor 4 kernels (2 fused, 2 extern)"
    text = hover_text(FileReport(PATH, [cls]), 6, 8, markdown=False)
    assert "inductor: line 6 runs in 1 kernel (CPU, C++; a GPU's Triton kernels differ)" in text
    assert "cpp_fused_add_mul_relu_sigmoid_0 generated kernel: sigmoid, mul, add · fused with line 5" in text
    markdown = hover_text(FileReport(PATH, [cls]), 5, 8)
    assert "`extern_kernels.addmm` library call: addmm · [show code](command:fxlens.showKernel?" in markdown
    assert ranges([13, 14, 16, 20, 21, 22]) == "13–14, 16, 20–22"


def test_aten_nodes_take_the_kernel_that_runs_their_op_on_their_line():
    def node(name: str, target: str, line: int) -> Node:
        return Node(name, "call_function", target, 1, line=line)

    result = _level([_compiled()])
    core = LevelResult(
        "core-aten",
        True,
        [
            Node("x", "placeholder", "x", 1),
            node("permute", "aten.permute.default", 5),
            node("addmm", "aten.addmm.default", 5),
            node("relu", "aten.relu.default", 5),
            node("sigmoid", "aten.sigmoid.default", 6),
            node("mul", "aten.mul.Tensor", 6),
            node("add", "aten.add.Tensor", 6),
            node("addmm_1", "aten.addmm.default", 7),
            node("_softmax", "aten._softmax.default", 7),
        ],
    )
    owners = kernel_of_nodes(core, result)
    assert owners == {
        "addmm": "extern_kernels.addmm:1",
        "relu": "cpp_fused_add_mul_relu_sigmoid_0:2",
        "sigmoid": "cpp_fused_add_mul_relu_sigmoid_0:2",
        "mul": "cpp_fused_add_mul_relu_sigmoid_0:2",
        "add": "cpp_fused_add_mul_relu_sigmoid_0:2",
        "addmm_1": "extern_kernels.addmm:3",
        # an op inductor decomposed: where the pre-grad node of its kind works
        "_softmax": "cpp_fused__softmax_1:4",
    }
    aten = LevelResult("aten", True, [node("linear", "aten.linear.default", 5), node("softmax", "aten.softmax.int", 7)])
    assert kernel_of_nodes(aten, result) == {"linear": "extern_kernels.addmm:1", "softmax": "cpp_fused__softmax_1:4"}
    payload = graph_payload("file:///w/mlp.py", _class(result, core), "core-aten")
    drawn = {n["id"]: (n.get("kernel"), n.get("kernel_colour")) for n in payload["graph"]["nodes"]}
    assert drawn["relu"] == drawn["add"] == ("cpp_fused_add_mul_relu_sigmoid_0:2", 1) and drawn["permute"] == (
        None,
        None,
    )
    kernels = graph_payload("file:///w/mlp.py", _class(result, core), "inductor")["graph"]["nodes"]
    assert [(n["kernel_colour"], n["kind"], n["lines"]) for n in kernels] == [
        (0, "extern", "5"),
        (1, "fused", "5–6"),
        (2, "extern", "7"),
        (3, "fused", "7"),
    ]

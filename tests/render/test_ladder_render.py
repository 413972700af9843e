"""The rung a level's opcode mix names (render/ladder.py), on the node kinds each level produces."""

from fxlens.render.ladder import rung
from fxlens.report import LevelResult, Node


def _level(*ops_targets) -> LevelResult:
    nodes = [Node("x", "placeholder", "x", 1)]
    nodes += [Node(f"n{i}", op, target, 1) for i, (op, target) in enumerate(ops_targets)]
    return LevelResult("any", True, [*nodes, Node("output", "output", "output", 0)])


def test_call_module_is_above_aot_autograd():
    assert (
        rung(_level(("call_module", "fc"), ("call_function", "torch.relu"))).name == "above aot_autograd (module level)"
    )


def test_torch_functions_and_methods_without_modules_are_the_torch_level():
    found = rung(_level(("call_function", "torch._C._nn.linear"), ("call_method", "sum")))
    assert found.name == "above aot_autograd (torch level)" and "call_method" in found.why


def test_aten_overloads_with_getitems_are_below_aot_autograd():
    level = _level(("call_function", "aten.native_layer_norm.default"), ("call_function", "operator.getitem"))
    assert rung(level).name == "below aot_autograd (ATen)"


def test_a_mix_says_so_and_an_empty_graph_computes_nothing():
    assert rung(_level(("call_function", "aten.relu.default"), ("call_function", "torch.relu"))).name.startswith(
        "mixed"
    )
    assert rung(_level()).name == "no computing node"

"""Where a graph sits on the ladder, read off its opcodes as the lesson teaches: the deeper the graph,
the fewer opcodes it uses. `call_module` only exists above aot_autograd (modules are still calls); below
it every node that computes is an ATen overload. Pure: a level's nodes -> its name."""

from __future__ import annotations

from dataclasses import dataclass

from fxlens.report import LevelResult

COMPUTING = ("call_function", "call_method", "call_module")
# picks an element of a tuple an op returned (native_layer_norm's three outputs): it computes nothing
STRUCTURAL = ("operator.getitem",)


@dataclass(frozen=True)
class Rung:
    name: str  # "below aot_autograd (ATen)"
    why: str  # the opcode mix that says so


def rung(result: LevelResult) -> Rung:
    """The rung of a traced level's graph, from its opcode mix alone (kernels: below the last rung)."""
    computing = [n for n in result.nodes if n.op in COMPUTING and n.target not in STRUCTURAL]
    if not computing:
        return Rung("no computing node", "the graph only passes its inputs through")
    kernels = sum(1 for n in computing if n.kernel)
    if kernels:
        return Rung(
            "below inductor (kernels)",
            f"{kernels} kernel{'s' if kernels != 1 else ''} inductor generated or calls: the code that runs",
        )
    modules = sum(1 for n in computing if n.op == "call_module")
    if modules:
        return Rung(
            "above aot_autograd (module level)",
            f"{modules} call_module node{'s' if modules != 1 else ''}: submodules are still calls",
        )
    aten = sum(1 for n in computing if n.op == "call_function" and n.target.startswith("aten."))
    if aten == len(computing):
        return Rung("below aot_autograd (ATen)", "every computing node is an ATen overload")
    if aten:
        return Rung("mixed: torch-level and ATen ops", f"{aten} of {len(computing)} computing nodes are ATen overloads")
    methods = sum(1 for n in computing if n.op == "call_method")
    return Rung(
        "above aot_autograd (torch level)",
        "torch functions" + (" and Tensor methods (call_method)" if methods else "") + ", no call_module",
    )

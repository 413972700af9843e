"""The `backward` level: the joint forward+backward graph (aot_autograd), partitioned into a forward and
a backward graph as torch.compile's partitioner does, and the values the forward saves for backward.

The joint graph is traced from the aten level's ExportedProgram (exported here when that level did not
run), run node by node through an fx Interpreter under `preserve_node_meta`: aot_autograd then copies
each exported node's stack trace onto the ATen nodes it becomes, and the forward's onto the backward
nodes that differentiate it. A backward node with no stack trace takes the line of the forward node
with its `seq_nr` (torch's link from a backward op to the forward op it differentiates).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch._functorch import partitioners
from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
from torch.utils import _pytree as pytree

from fxlens.report import LevelResult, Node, Span
from fxlens.units import bytes_text
from fxlens.worker.failures.classify import classify, message_text
from fxlens.worker.levels import aten as trace_aten
from fxlens.worker.levels import devices
from fxlens.worker.levels.values import SampledSizes

LEVEL = "backward"
FORWARD, BACKWARD = "forward", "backward"


def scalar_loss(out: Any) -> tuple[torch.Tensor, str]:
    """The scalar backward starts from, and how it was made ("" when the output is one): the output
    itself when it is a scalar, else the sum of every floating output's `.sum()`."""
    tensors = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not tensors:
        raise ValueError("the module returns no floating-point tensor to differentiate")
    if len(tensors) == 1 and tensors[0].dim() == 0:
        return tensors[0], ""
    reduced = (
        "out.sum()" if len(tensors) == 1 else f"the sum of out.sum() over its {len(tensors)} floating-point outputs"
    )
    total = tensors[0].sum()
    for t in tensors[1:]:
        total = total + t.sum()
    return total, reduced


class _Loss(torch.nn.Module):
    """The exported module run node by node (so its nodes' metadata reaches aot_autograd's), reduced to
    the scalar backward starts from (scalar_loss)."""

    def __init__(self, exported: torch.nn.Module) -> None:
        super().__init__()
        self.exported = exported
        self.reduced = ""  # how the loss was made, for the note

    def forward(self, *args: Any) -> torch.Tensor:
        loss, self.reduced = scalar_loss(torch.fx.Interpreter(self.exported).run(*args))
        return loss


def joint(exported_program: Any, args: tuple) -> tuple[Any, _Loss]:
    """The joint graph (meta["partitioner_tag"], meta["seq_nr"], the exported nodes' stack traces)."""
    loss = _Loss(exported_program.module())
    with contextlib.ExitStack() as stack, fx_traceback.preserve_node_meta():
        traced = aot_export_joint_with_descriptors(stack, loss, args)
        return traced.graph_module, loss


def forward_output_count(joint_module: Any) -> int:
    """How many of the joint graph's outputs are the forward's (the rest are gradients)."""
    from torch._functorch._aot_autograd.descriptors import GradAOTOutput

    output = next(iter(joint_module.graph.find_nodes(op="output")))
    return sum(1 for d in output.meta.get("desc") or [] if d is not None and not isinstance(d, GradAOTOutput))


def partition(joint_module: Any) -> tuple[Any, Any]:
    """Forward and backward graphs as torch.compile (inductor) splits them: the min-cut partitioner,
    which recomputes cheap ops in backward rather than saving them."""
    return partitioners.min_cut_rematerialization_partition(
        joint_module, None, compiler="inductor", num_fwd_outputs=forward_output_count(joint_module)
    )


def saved_names(forward_module: Any, user_outputs: int) -> list[str]:
    """The forward graph's outputs past the user's: what it stashes for backward."""
    output = next(iter(forward_module.graph.find_nodes(op="output")))
    return [n.name for n in output.args[0][user_outputs:] if isinstance(n, torch.fx.Node)]


def value_bytes(value: Any) -> int | None:
    if isinstance(value, torch.Tensor):
        try:
            return int(value.numel()) * value.element_size()
        except Exception:  # noqa: BLE001  a size known only at run time
            return None
    return None


def _mark(nodes: list[Node], phase: str) -> list[Node]:
    for node in nodes:
        node.phase, node.graph = phase, 0 if phase == FORWARD else 1
    return nodes


def _link_by_seq_nr(fx_graphs: list[Any], nodes: list[Node]) -> None:
    """A node with no user line takes the line of a forward node with its seq_nr."""
    graph_nodes = [n for g in fx_graphs for n in g.graph.nodes]
    lines: dict[int, Node] = {}
    for fx_node, node in zip(graph_nodes, nodes):
        seq = fx_node.meta.get("seq_nr")
        if node.phase == FORWARD and node.line is not None and seq is not None:
            lines.setdefault(seq, node)
    for fx_node, node in zip(graph_nodes, nodes):
        source = lines.get(fx_node.meta.get("seq_nr"))
        if node.line is None and source is not None and node.op not in ("placeholder", "output"):
            node.line, node.col, node.end_line, node.end_col = source.line, source.col, source.end_line, source.end_col
            node.function, node.scope = source.function, source.scope


def _failed(diagnostic: Any, started: float) -> LevelResult:
    diagnostic.level = LEVEL
    return LevelResult(LEVEL, False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)


def _joint_and_parts(exported: Any, call: tuple) -> tuple[Any, _Loss, Any, Any]:
    joint_module, loss = joint(exported, tuple(pytree.tree_leaves(call)))
    return (joint_module, loss, *partition(joint_module))


def _differentiated(example: Any, exported: Any) -> tuple[Any, _Loss, Any, Any]:
    """(joint, loss, forward, backward) of the export. An export on meta tensors of code that mixes in CPU
    tensors it makes (`self.wpe(torch.arange(T))`) exports, but its backward mixes meta and CPU
    gradients: such code is exported and differentiated again on fake CPU tensors, as it runs for the user."""
    call = (tuple(example.inputs), dict(example.kwargs or {}))
    try:
        return _joint_and_parts(exported, call)
    except Exception as error:
        if devices.meta_limit(error) != devices.MIXES_DEVICES:
            raise

    def step(module: Any, inputs: tuple) -> tuple[Any, _Loss, Any, Any]:
        return _joint_and_parts(trace_aten.export(module, inputs[0], None, inputs[1]), inputs)

    ran = devices.run(step, example.instance, call, "fake", getattr(example, "rebuild", None))
    ran.reason = devices.mixed_devices_reason(ran.tensors)
    devices.note(example.build, ran)
    return ran.value


def run(
    example: Any, path: str, lines: list[str], class_span: Span, exported: Any = None, export_failed: bool = False
) -> LevelResult:
    """`exported`: the aten level's ExportedProgram, if it ran; `export_failed`: it ran and failed."""
    started = time.perf_counter()
    if example.inputs is None:
        return LevelResult(LEVEL, False, note="no example inputs: the backward graph is traced from them")
    if not any(p.requires_grad for p in example.instance.parameters()):
        return LevelResult(
            LEVEL,
            False,
            note="no parameter requires grad: there is no backward graph to "
            "train (the module has no parameters, or all are frozen)",
        )
    if export_failed:
        return LevelResult(
            LEVEL,
            False,
            note="no backward graph: the aten level's export failed (its diagnostic says where)",
            seconds=time.perf_counter() - started,
        )
    try:
        if exported is None:
            exported = trace_aten.export_for(example)
        joint_module, loss, forward_module, backward_module = _differentiated(example, exported)
    except Exception as error:  # noqa: BLE001  the user's code failing to differentiate: the level's diagnostic
        diagnostic = classify(error, path, lines, "trace", LEVEL, class_span)
        if exported is not None and diagnostic.category == "trace":
            diagnostic.explanation = (
                f"torch.export traced this module, but tracing its backward with "
                f"aot_autograd raised {type(error).__name__}: {message_text(error)}"
            )
            diagnostic.fix = (
                "The aten level's graph stands; an op with no derivative formula (or a custom "
                "op without an autograd registration) cannot be differentiated."
            )
        return _failed(diagnostic, started)
    sizes = SampledSizes({})
    forward = _mark(trace_aten.nodes_of(forward_module, path, lines, sizes, {}), FORWARD)
    backward = _mark(trace_aten.nodes_of(backward_module, path, lines, sizes, {}), BACKWARD)
    nodes = forward + backward
    _link_by_seq_nr([forward_module, backward_module], nodes)
    saved = set(saved_names(forward_module, forward_output_count(joint_module)))
    by_name = {n.name: n for n in forward_module.graph.nodes}
    total = 0
    for node in forward:
        if node.name in saved:
            node.saved, node.bytes = True, value_bytes(by_name[node.name].meta.get("val"))
            total += node.bytes or 0
    computing = [n for n in nodes if n.op not in ("placeholder", "output")]
    unlinked = sum(1 for n in computing if n.line is None)
    notes = [
        f"backward of {loss.reduced}" if loss.reduced else "backward of the module's scalar output",
        f"saves {len(saved)} value{'s' if len(saved) != 1 else ''} for backward, "
        f"{bytes_text(total)} at the example size",
    ]
    if unlinked:
        notes.append(
            f"{unlinked} node{'s' if unlinked != 1 else ''} map to no line of this file (torch carries "
            f"no stack trace or seq_nr link to one: the loss fxlens adds, its gradient, library code)"
        )
    code = f"# forward\n{forward_module.code.strip()}\n\n# backward\n{backward_module.code.strip()}\n"
    return LevelResult(LEVEL, True, nodes, [], code, time.perf_counter() - started, "; ".join(notes))

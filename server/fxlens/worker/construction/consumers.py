"""The first layer a forward parameter flows into, read from the fx graph breadth-first: the layer whose shape
its example input is guessed from (guess_inputs.py), where the value enters that call, and the RNN after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.fx as fx
from torch import nn


@dataclass
class Consumer:
    """The first leaf module a parameter flows into, where it enters that call, and what follows it."""

    layer: nn.Module
    # the argument index the value enters as (1 for an RNN's hidden state), and the index inside a tuple there
    position: tuple[int, ...] = (0,)
    # the first RNN the layer's output reaches (its `batch_first` sets the layout of token ids)
    rnn_after: nn.RNNBase | None = None


def _position(user: fx.Node, value: fx.Node) -> tuple[int, ...]:
    for index, arg in enumerate(user.args):
        if arg is value:
            return (index,)
        if isinstance(arg, (tuple, list)) and value in arg:
            return (index, list(arg).index(value))
    return (0,)


def _breadth_first(start: fx.Node) -> list[tuple[fx.Node, fx.Node]]:
    """(node, the node it was reached from), nearest first."""
    order, frontier, seen = [], [(start, start)], set()
    while frontier:
        node, came_from = frontier.pop(0)
        if node in seen:
            continue
        seen.add(node)
        order.append((node, came_from))
        frontier.extend((user, node) for user in node.users)
    return order


# layers that take any shape and keep its rank and channels: the input's shape is the next layer's to say
_ANY_SHAPE = (
    nn.modules.pooling._MaxPoolNd,
    nn.modules.pooling._AvgPoolNd,
    nn.modules.pooling._AdaptiveAvgPoolNd,
    nn.modules.pooling._AdaptiveMaxPoolNd,
    nn.modules.dropout._DropoutNd,
    nn.Identity,
    nn.Upsample,
    nn.ReLU,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.LeakyReLU,
    nn.ReLU6,
    nn.Mish,
    nn.Hardswish,
)


def first_consumer(graph: fx.Graph | fx.GraphModule | None, root: nn.Module, param: str) -> Consumer | None:
    """The first leaf module the parameter flows into (past layers that take any shape: a U-Net's
    `MaxPool2d` then `Conv2d`), following the graph (traced whole, or up to a failure) breadth-first."""
    if isinstance(graph, fx.GraphModule):
        graph = graph.graph
    if graph is None:
        return None
    start = next((n for n in graph.nodes if n.op == "placeholder" and n.target == param), None)
    if start is None:
        return None
    for node, came_from in _breadth_first(start):
        if node.op == "call_module" and isinstance(node.target, str):  # a module's target is its path
            layer = root.get_submodule(node.target)
            if isinstance(layer, _ANY_SHAPE):
                continue
            return Consumer(layer, _position(node, came_from), _rnn_reached(root, node))
    return None


def _rnn_reached(root: nn.Module, start: fx.Node) -> nn.RNNBase | None:
    for node, _ in _breadth_first(start):
        layer = root.get_submodule(node.target) if node.op == "call_module" and isinstance(node.target, str) else None
        if isinstance(layer, nn.RNNBase):
            return layer
    return None

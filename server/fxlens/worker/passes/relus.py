"""What counts as a relu in an fx graph: the four spellings symbolic_trace records."""

from __future__ import annotations

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn

_FUNCTIONS = (torch.relu, F.relu, torch.relu_, F.relu_)


def is_relu(node: fx.Node, modules: dict[str, nn.Module]) -> bool:
    """torch.relu(x) / F.relu(x) (call_function), x.relu() (call_method), nn.ReLU (call_module)."""
    if node.op == "call_function":
        return node.target in _FUNCTIONS
    if node.op == "call_method":
        return node.target in ("relu", "relu_")
    if node.op == "call_module":
        return isinstance(node.target, str) and type(modules.get(node.target)) is nn.ReLU  # str: a module's path
    return False


def relu_input(node: fx.Node) -> fx.node.Argument:
    return node.args[0] if node.args else node.kwargs["input"]

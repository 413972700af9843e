"""Describe traced values (tensors, fake tensors, SymInts, tuples) as report data."""
from __future__ import annotations

import re
from typing import Any, Optional

import torch

def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


class SymbolNames:
    """Maps torch's symbol names (s77) to the names the user sees (B, T) in every printed size."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def learn(self, size: Any, name: str) -> None:
        if isinstance(size, torch.SymInt):
            expr = size.node.expr
            if getattr(expr, "is_Symbol", False):
                self.names.setdefault(str(expr), name)

    def dim(self, size: Any) -> Any:
        if isinstance(size, torch.SymInt):
            expr = size.node.expr
            if getattr(expr, "is_number", False):
                return int(expr)
            text = str(expr)
            if not self.names:
                return text
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b")
            return pattern.sub(lambda m: self.names[m.group(1)], text)
        return int(size)


def describe(value: Any, symbols: SymbolNames) -> tuple[Optional[list], Optional[str], Optional[str]]:
    """(shape, dtype, value-text) of one traced value."""
    if isinstance(value, torch.Tensor):
        return [symbols.dim(s) for s in value.shape], dtype_name(value.dtype), None
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return None, None, f"{type(value).__name__} {symbols.dim(value) if isinstance(value, torch.SymInt) else value}"
    if isinstance(value, (tuple, list)):
        parts = []
        for item in value:
            shape, dtype, text = describe(item, symbols)
            if shape is not None:
                parts.append(f"Tensor({', '.join(map(str, shape))}) {dtype}")
            else:
                parts.append(text or type(item).__name__)
        return None, None, f"{type(value).__name__}[{', '.join(parts)}]"
    if value is None:
        return None, None, None
    if isinstance(value, (int, float, bool)):
        return None, None, f"{type(value).__name__} {value}"
    return None, None, type(value).__name__


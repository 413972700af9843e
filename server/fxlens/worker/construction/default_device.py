"""The default device the user's code asks for (`torch.set_default_device("cuda")`), kept out of fxlens's runs.

fxlens builds every module on the meta device and runs forward on meta, fake CPU or small real CPU
tensors (levels/devices.py): no weights are allocated, and the operators of a graph are the same on every
device. A default device set by the code would instead reach construction (`__init__` setting it builds
its layers there: "Torch not compiled with CUDA enabled" on a machine without a GPU), fxlens's own
tensors (the inputs it makes, the CPU weights) and every class traced after the one that set it, and
what a trace makes would depend on the machine fxlens runs on.

So while fxlens runs a file, `torch.set_default_device` records what was asked and where, and changes
nothing: tensors the code makes without `device=` are CPU ones, as on a machine without an accelerator.
Each line that asks gets one information diagnostic saying so.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from fxlens.report import Diagnostic

CATEGORY = "default-device"


@dataclass
class Asked:
    """The devices the code asked for as its default, by the line of the user's file that asked (0: a
    library the file imports asked, outside the file)."""

    path: str
    by_line: dict[int, str] = field(default_factory=dict)

    def record(self, device: Any) -> None:
        if device is None:
            return  # "back to the CPU": what fxlens runs on anyway
        chosen = torch.device(device)  # an invalid device fails here, as it would for the user
        if chosen.type == "cpu":
            return
        self.by_line.setdefault(_calling_line(self.path), str(chosen))

    def diagnostics(self, lines: list[str]) -> list[Diagnostic]:
        return [_diagnostic(line, device, lines) for line, device in sorted(self.by_line.items())]


def _calling_line(path: str) -> int:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == path:
            return frame.f_lineno
        frame = frame.f_back
    return 0


def available(device: str) -> bool:
    """Whether this machine has `device` (meta and cpu always; an accelerator when torch sees one)."""
    kind = torch.device(device).type
    if kind in ("cpu", "meta"):
        return True
    is_available = getattr(getattr(torch, kind, None), "is_available", None)
    try:
        return bool(is_available()) if callable(is_available) else False
    except Exception:  # noqa: BLE001  a backend that cannot even say: it is not there
        return False


def _diagnostic(line: int, device: str, lines: list[str]) -> Diagnostic:
    where = line if 1 <= line <= len(lines) else 1
    text = lines[where - 1] if lines else ""
    start = len(text) - len(text.lstrip())
    asker = "the code sets" if line else "a library this file imports sets"
    lacks = ", which this machine does not have" if not available(device) else ""
    return Diagnostic(
        where, len(text[:start].encode()), where, len(text.encode()), "information", CATEGORY,
        f"{asker} the default device to `{device}`{lacks}: fxlens traced on the meta device and the CPU instead",
        explanation="fxlens builds modules on the meta device (no weights are allocated) and runs forward on "
                    "meta, fake or small CPU tensors, whatever the default device: the graph's operators are "
                    "the same on every device, and tensors the code makes without `device=` show `device=cpu`. "
                    "In your own runs the default device still applies.",
        fix="Nothing to fix for fxlens. To see the graph a device-specific kernel makes, trace on that machine "
            "with torch itself.")


@contextmanager
def intercepted(path: str) -> Iterator[Asked]:
    """While inside, `torch.set_default_device` only records what the code asks (see the module's docstring)."""
    asked = Asked(path)
    original = torch.set_default_device
    torch.set_default_device = asked.record
    try:
        yield asked
    finally:
        torch.set_default_device = original

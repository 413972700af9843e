"""The default device the user's code asks for (`torch.set_default_device("cuda")`), kept out of fxlens's runs.

fxlens builds every module on the meta device and runs forward on meta, fake CPU or small real CPU
tensors (levels/devices.py): no weights are allocated, and the operators of a graph are the same on every
device. A default device set by the code would instead reach construction (`__init__` setting it builds
its layers there: "Torch not compiled with CUDA enabled" on a machine without a GPU), fxlens's own
tensors (the inputs it makes, the CPU weights) and every class traced after the one that set it, and
what a trace makes would depend on the machine fxlens runs on.

So while fxlens runs a file, `torch.set_default_device` records what was asked and where, and changes
nothing: tensors the code makes without `device=` are CPU ones, as on a machine without an accelerator.
Code that asks for an accelerator this machine lacks in so many words (`device="cuda"`, `.cuda()`,
`.to("cuda")`, `with torch.device("cuda")`) gets the meta device instead, for what construction and
forward create: the graph's operators are the same. Each line that asks gets one information
diagnostic saying so.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fxlens.report import Diagnostic, Span

CATEGORY = "default-device"


@dataclass
class Asked:
    """The devices the code asked for as its default, by the line of the user's file that asked (0: a
    library the file imports asked, outside the file)."""

    path: str
    by_line: dict[int, str] = field(default_factory=dict)
    # lines that asked for an accelerator this machine lacks, for a tensor or a module (not the default)
    redirected: dict[int, str] = field(default_factory=dict)

    def record(self, device: Any) -> None:
        if device is None:
            return  # "back to the CPU": what fxlens runs on anyway
        chosen = torch.device(device)  # an invalid device fails here, as it would for the user
        if chosen.type == "cpu":
            return
        self.by_line.setdefault(_calling_line(self.path), str(chosen))

    def diagnostics(self, lines: list[str]) -> list[Diagnostic]:
        return (
            [_diagnostic(line, device, lines) for line, device in sorted(self.by_line.items())]
            # (a request with no line of the file on the stack is fxlens's own re-run of the code)
            + [
                _redirect_diagnostic(line, device, lines)
                for line, device in sorted(self.redirected.items())
                if line and line not in self.by_line
            ]
        )


def _lacked(device: Any) -> bool:
    """Whether `device` names an accelerator this machine does not have (an invalid one: False, so
    that torch raises its own error)."""
    if isinstance(device, torch.device):
        return not available(device.type)
    if not isinstance(device, str):  # None, an index, a traced value: nothing to redirect
        return False
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        return False
    return not available(chosen.type)


class _LackedToMeta(TorchFunctionMode):
    """Tensors asked for on a missing accelerator are made on meta; moving to one stays where it is."""

    def __init__(self, asked: Asked) -> None:
        super().__init__()
        self.asked = asked

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name not in ("cuda", "to") and "device" not in kwargs:
            return func(*args, **kwargs)  # every other call, as it is: this runs on every torch call
        kwargs = dict(kwargs)
        if name == "cuda" and args and isinstance(args[0], torch.Tensor):
            self._record("cuda")
            return args[0]
        if name == "to" and args and isinstance(args[0], torch.Tensor):
            moved = [a for a in args[1:] if _lacked(a)] + ([kwargs["device"]] if _lacked(kwargs.get("device")) else [])
            if moved:
                self._record(moved[0])
                args = (args[0], *[a for a in args[1:] if not _lacked(a)])
                kwargs.pop("device", None)
                if len(args) == 1 and not kwargs:
                    return args[0]
        elif _lacked(kwargs.get("device")):
            self._record(kwargs["device"])
            kwargs["device"] = "meta"
        return func(*args, **kwargs)

    def _record(self, device: Any) -> None:
        self.asked.redirected.setdefault(_calling_line(self.asked.path, 3), str(torch.device(device)))


def _calling_line(path: str, depth: int = 2) -> int:
    frame: types.FrameType | None = sys._getframe(depth)
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


def _line_span(line: int, lines: list[str]) -> Span:
    """From the line's first character to its end; line 1 for a line not in the file (a library's: 0)."""
    where = line if 1 <= line <= len(lines) else 1
    text = lines[where - 1] if lines else ""
    start = len(text) - len(text.lstrip())
    return Span(where, len(text[:start].encode()), where, len(text.encode()))


def _diagnostic(line: int, device: str, lines: list[str]) -> Diagnostic:
    asker = "the code sets" if line else "a library this file imports sets"
    lacks = ", which this machine does not have" if not available(device) else ""
    return Diagnostic.at(
        _line_span(line, lines),
        "information",
        CATEGORY,
        f"{asker} the default device to `{device}`{lacks}: fxlens traced on the meta device and the CPU instead",
        explanation="fxlens builds modules on the meta device (no weights are allocated) and runs forward on "
        "meta, fake or small CPU tensors, whatever the default device: the graph's operators are "
        "the same on every device, and tensors the code makes without `device=` show `device=cpu`. "
        "In your own runs the default device still applies.",
        fix="Nothing to fix for fxlens. To see the graph a device-specific kernel makes, trace on that machine "
        "with torch itself.",
    )


def _redirect_diagnostic(line: int, device: str, lines: list[str]) -> Diagnostic:
    return Diagnostic.at(
        _line_span(line, lines),
        "information",
        CATEGORY,
        f"this line asks for `{device}`, which this machine does not have: "
        "fxlens made those tensors on the meta device",
        explanation='Without the accelerator, `device="cuda"`, `.cuda()`, `.to("cuda")` and '
        '`with torch.device("cuda")` fail in torch itself; the graph\'s operators are the same on '
        "every device, so fxlens builds and runs them on meta (no weights are allocated).",
        fix="Nothing to fix for fxlens. On a machine with the accelerator the same code runs there.",
    )


@contextmanager
def intercepted(path: str) -> Iterator[Asked]:
    """While inside, `torch.set_default_device` only records what the code asks (see the module's docstring)."""
    asked = Asked(path)
    original = torch.set_default_device
    torch.set_default_device = asked.record
    try:
        with _LackedToMeta(asked):
            yield asked
    finally:
        torch.set_default_device = original

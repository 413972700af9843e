"""What a graph dynamo captured assumed: its guards, as plain data that crosses from the worker to the
server (and the CLI), inside the dynamo level's result.

Stdlib only, like report.py. A guard is one check of torch's guard manager, the tree `torch.compile`
evaluates before it reuses a compiled frame; when one fails, that frame compiles again. Each is kept in
torch's own words (its kind and code) and, where torch's text says it, the facts behind it (a tensor's
dtype and sizes, the value a Python object must equal), which render/guards.py puts in a person's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Guard:
    # torch's name for the check (its guard manager's leaf class): "TENSOR_MATCH", "EQUALS_MATCH", "TYPE_MATCH",
    # "ID_MATCH", "GLOBAL_STATE", "LAMBDA_GUARD", "DIMENSION_DYNAMIC_MARKING_GUARD", ...
    kind: str
    # what it reads, as torch spells it: "L['x']", "L['self'].scale"; "" for the process's state
    source: str
    # the check as torch's guard log prints it (a line of TORCH_LOGS=guards), without the comment it adds
    code: str
    # the same thing in the user's words: "x", "self.scale", "self.fc.weight", "torch.relu"; "" for state
    subject: str = ""
    # "input" (a forward argument), "attribute" (of the module or a child), "global" (a name of a module's
    # globals) or "state" (grad mode, default device, the torch function mode stack...)
    role: str = "state"
    # the user's line that made dynamo add it (1-based, UTF-8 columns); None: no frame of the user's file
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    # a TENSOR_MATCH's facts: None in `shape` is a dynamic size (any value passes)
    dtype: str | None = None
    shape: list[int | None] | None = None
    stride: list[int | None] | None = None
    device: str | None = None
    requires_grad: bool | None = None
    # the value an EQUALS_MATCH, TRUE_MATCH, FALSE_MATCH or NONE_MATCH expects, as Python writes it
    value: str | None = None
    # a GLOBAL_STATE's settings as torch records them ({"grad_mode": true, "default_dtype": 6, ...})
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class CompiledFrame:
    """One frame dynamo compiled for the call (a graph break resumes in a frame of its own) and its guards."""

    # the user's function ("Gate.forward"); a frame resumed after a break is named for the function it resumes
    function: str
    # torch's compile id ("0/0": frame 0, its first compile)
    compile_id: str
    # the line of its `def` in the user's file (what a lens sits on); None when the code is not the file's
    line: int | None = None
    # a resumed frame: the line it resumes at
    resumed_at: int | None = None
    guards: list[Guard] = field(default_factory=list)
    # guards torch made that the report leaves out (a model with thousands of parameters): counted here
    cut: int = 0

    def count(self) -> int:
        return len(self.guards) + self.cut


GUARD_FIELDS = tuple(f.name for f in fields(Guard))
FRAME_FIELDS = tuple(f.name for f in fields(CompiledFrame))


def _known(names: tuple[str, ...], data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in names}


def frame_from_json(data: dict[str, Any]) -> CompiledFrame:
    frame = CompiledFrame(**_known(FRAME_FIELDS, data))
    frame.guards = [Guard(**_known(GUARD_FIELDS, g)) for g in data.get("guards", [])]
    return frame

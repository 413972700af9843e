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


@dataclass
class DynamicProof:
    """The module compiled at the example's sizes and at its varying sizes grown (B doubled, T tripled), on
    real CPU tensors: how many frames the second size compiled again as the user compiles it, with
    `dynamic=True` and with `torch._dynamo.mark_dynamic` (dynamo's own counter), and the outputs against eager."""

    # the inputs and sizes that vary: [["x", [0]]] (input x, its size 0), as mark_dynamic takes them
    marks: list[list[Any]] = field(default_factory=list)
    # those sizes in each of the two calls: [[[4]], [[8]]]
    sizes: list[list[list[int]]] = field(default_factory=list)
    static_recompiles: int | None = None
    dynamic_recompiles: int | None = None
    marked_recompiles: int | None = None
    marked_error: str = ""  # why torch refused mark_dynamic (the model fixes that size)
    # the dynamic=True outputs at both sizes against eager's: "equal", "close (rtol=…, atol=…)", "differ"
    outputs: str = ""
    error: str = ""  # why there is no proof (the forward fails at the grown size: the model fixes it)

    def proven(self) -> bool:
        """dynamic=True compiles once for both sizes where the static compile compiled twice, outputs kept."""
        return (
            not self.error
            and bool(self.static_recompiles)
            and self.dynamic_recompiles == 0
            and (self.outputs == "equal" or self.outputs.startswith("close"))
        )


GUARD_FIELDS = tuple(f.name for f in fields(Guard))
FRAME_FIELDS = tuple(f.name for f in fields(CompiledFrame))
PROOF_FIELDS = tuple(f.name for f in fields(DynamicProof))


def _known(names: tuple[str, ...], data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in names}


def proof_from_json(data: object) -> DynamicProof | None:
    return DynamicProof(**_known(PROOF_FIELDS, data)) if isinstance(data, dict) else None


def frame_from_json(data: dict[str, Any]) -> CompiledFrame:
    frame = CompiledFrame(**_known(FRAME_FIELDS, data))
    frame.guards = [Guard(**_known(GUARD_FIELDS, g)) for g in data.get("guards", [])]
    return frame

"""What running a graph pass found: plain data that crosses from the worker to the server (and the CLI).

Stdlib only, like report.py: the worker fills it in the user's interpreter, the server and the CLI
render it. Coordinates are Python's (1-based lines, 0-based UTF-8 byte columns), as in `fxlens graph
--json`; `schema` versions the JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fxlens.plain_data import from_fields
from fxlens.report import Diagnostic, Node

PASS_SCHEMA = 1

# equal: bit for bit on every draw; close: within the tolerance shown; changes results: beyond it;
# quantized: a quantization pass, whose change is expected and given as numbers (max |diff|, SQNR);
# not run: no proof (why_not says why)
VERDICTS = ("equal", "close", "changes results", "quantized", "not run")
# changed: the same node calling the same kind of module (or reading the same attribute), whose module the
# pass replaced or whose parameters and buffers it changed (a BatchNorm folded into the conv before it)
CHANGES = ("removed", "added", "retargeted", "changed")


@dataclass
class PassInfo:
    """A pass fxlens can run: a built-in (worker/passes) or a `# fxlens: pass` function of the workspace."""

    name: str
    kind: str  # "builtin" | "user"
    what: str = ""
    quantization: bool = False  # its change of results is expected (reported as numbers, not as failure)
    path: str | None = None  # user passes: the file and the `def` line
    line: int | None = None
    col: int | None = None
    end_col: int | None = None


@dataclass
class NodeChange:
    change: str  # one of CHANGES
    name: str
    op: str
    target: str
    before: str = ""  # retargeted: the target it had
    # the nodes of the original graph it stands for (gone after the pass): node.meta["from_node"]
    # provenance where torch (or fxlens's hooks on the graph) recorded it
    replaces: list[str] = field(default_factory=list)
    # nodes still in the graph whose users it took over, the same provenance: it was inserted after them
    took_users_of: list[str] = field(default_factory=list)
    how: str = "name"  # "from_node" (provenance) | "name" (matched by name and target)
    # changed: what changed in its module or attribute ("module replaced: weight, bias changed")
    detail: str = ""
    # the span of the user's model file that made it (an added node: that of the first node it replaces)
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None


@dataclass
class OutputCheck:
    """One output of forward (a leaf of what it returns) compared over every draw."""

    index: int
    path: str  # where in the returned structure: "", "[0]", "['logits']"
    equal: bool
    max_abs_diff: float | None = None  # None: not a tensor (compared with ==)
    sqnr_db: float | None = None  # signal-to-quantization-noise ratio; None when equal (infinite)
    shape: list[int] | None = None
    dtype: str | None = None
    # the draw and element where the difference is largest ("draw 1, index (0, 3)")
    where: str = ""


@dataclass
class Proof:
    verdict: str = "not run"
    why_not: str = ""
    draws: int = 0
    seed: int = 0
    rtol: float = 0.0
    atol: float = 0.0
    outputs: list[OutputCheck] = field(default_factory=list)
    first_difference: str = ""  # "output [0], draw 0: max |diff| 0.42 at index (1, 3)"
    tensors: str = ""  # what the modules ran on ("cpu: seeded torch.randn at the example's sizes")
    # quantization passes: the prepared module calibrated on the draws and converted to int8
    # (quantize_fx.convert_fx), against the original: what quantizing would change, as numbers
    converted: Proof | None = None


@dataclass
class PassReport:
    pass_name: str
    kind: str  # "builtin" | "user"
    class_name: str
    path: str  # the model's file
    ok: bool = False  # the pass ran and gave a graph that lints
    quantization: bool = False
    # where the pass's diagnostics belong: the pass's own file (a user pass) or the model's file
    pass_path: str = ""
    pass_line: int | None = None
    counts_before: dict[str, int] = field(default_factory=dict)  # opcode -> nodes
    counts_after: dict[str, int] = field(default_factory=dict)
    nodes_before: list[Node] = field(default_factory=list)
    nodes_after: list[Node] = field(default_factory=list)
    changes: list[NodeChange] = field(default_factory=list)
    diff: str = ""  # the two printouts (str(graph)) as a unified diff
    code_after: str = ""
    proof: Proof = field(default_factory=Proof)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    schema: int = PASS_SCHEMA

    @property
    def changes_results(self) -> bool:
        """The verdict a user must act on: a pass meant to keep results did not."""
        return self.proof.verdict == "changes results"

    @property
    def total_before(self) -> int:
        return sum(self.counts_before.values())

    @property
    def total_after(self) -> int:
        return sum(self.counts_after.values())


def pass_to_json(report: PassReport) -> dict[str, Any]:
    return {"schema": report.schema, **{k: v for k, v in asdict(report).items() if k != "schema"}}


def pass_from_json(data: dict[str, Any]) -> PassReport:
    if data.get("schema") != PASS_SCHEMA:
        raise ValueError(f"pass report schema {data.get('schema')!r}, expected {PASS_SCHEMA}")
    report = from_fields(PassReport, data)
    report.nodes_before = [from_fields(Node, n) for n in data.get("nodes_before", [])]
    report.nodes_after = [from_fields(Node, n) for n in data.get("nodes_after", [])]
    report.changes = [from_fields(NodeChange, c) for c in data.get("changes", [])]
    proof = data.get("proof") or {}
    report.proof = _proof(proof)
    report.diagnostics = [from_fields(Diagnostic, d) for d in data.get("diagnostics", [])]
    return report


def _proof(data: dict[str, Any]) -> Proof:
    proof = from_fields(Proof, data)
    proof.outputs = [from_fields(OutputCheck, o) for o in data.get("outputs", [])]
    proof.converted = _proof(data["converted"]) if isinstance(data.get("converted"), dict) else None
    return proof


def info_to_json(info: PassInfo) -> dict[str, Any]:
    return asdict(info)

"""The report: plain data that crosses from the worker to the server (and to the CLI).

Stdlib only: the worker imports this module in the user's interpreter, the server in its own.
Coordinates are Python's: 1-based lines, 0-based UTF-8 byte columns. Only ``fxlens.lsp.positions``
converts them to LSP positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from fxlens.draft_report import Draft, DraftValue, draft_from_json
from fxlens.fix_report import FIX_CLASSES, Fix, fix_from_json
from fxlens.guard_report import (
    FRAME_FIELDS,
    GUARD_FIELDS,
    PROOF_FIELDS,
    CompiledFrame,
    DynamicProof,
    Guard,
    frame_from_json,
    proof_from_json,
)

# the level table, named from here too: most readers of a report read the levels with it
from fxlens.level_info import COLUMN_LEVELS as COLUMN_LEVELS
from fxlens.level_info import DEEP_LEVELS as DEEP_LEVELS
from fxlens.level_info import DEFAULT_LEVELS as DEFAULT_LEVELS
from fxlens.level_info import HOVER_LEVELS as HOVER_LEVELS
from fxlens.level_info import LEVEL_INFO as LEVEL_INFO
from fxlens.level_info import LEVELS as LEVELS
from fxlens.level_info import TRACE_ORDER as TRACE_ORDER
from fxlens.level_info import LevelInfo as LevelInfo
from fxlens.level_info import in_ladder_order as in_ladder_order
from fxlens.level_info import in_trace_order as in_trace_order
from fxlens.level_info import ladder_sorted as ladder_sorted
from fxlens.plain_data import from_fields

REPORT_VERSION = 1

OPCODES = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")


@dataclass
class Span:
    line: int
    col: int
    end_line: int
    end_col: int

    def copy_to(self, target: Any) -> None:
        """Give `target` (a Node, a Guard, a Diagnostic: anything with the four coordinates) this span."""
        target.line, target.col, target.end_line, target.end_col = self.line, self.col, self.end_line, self.end_col


@dataclass
class Node:
    name: str
    op: str
    target: str
    num_users: int
    users: list[str] = field(default_factory=list)
    # the node as torch prints it: "%fc : [num_users=1] = call_module[target=fc](args = (%x,), kwargs = {})"
    text: str = ""
    overload: str | None = None
    # a tensor's shape: ints, or strings for symbolic sizes ("B", "2*B")
    shape: list[int | str] | None = None
    dtype: str | None = None
    # what the value is when it is not a single tensor ("tuple[Tensor, Tensor, Tensor]", "SymInt B")
    value: str | None = None
    line: int | None = None
    col: int | None = None
    end_line: int | None = None
    end_col: int | None = None
    # qualified name of the innermost function of the analysed file that produced the node
    function: str | None = None
    # instance path of the submodule whose forward produced the node ("h.3.attn"), "" for the root
    scope: str = ""
    # which of the level's graphs the node is in, counted from 0 (dynamo captures one graph per break)
    graph: int | None = None
    # backward level: which of the partitioned graphs the node is in ("forward" | "backward")
    phase: str | None = None
    # backward level: the forward saves this value for backward, taking `bytes` at the example size
    saved: bool = False
    bytes: int | None = None
    # forward FLOPs at the example size as torch.utils.flop_counter counts them (aten levels); None: unknown
    flops: int | None = None
    # inductor level: the kernel this node is ({"kind": "fused" | "extern" | "fallback", "ops", "post", "pre",
    # "lines", "sources", "code", "code_line", ...}: worker/levels/kernel_map.py); None elsewhere
    kernel: dict[str, Any] | None = None


@dataclass
class Diagnostic:
    line: int
    col: int
    end_line: int
    end_col: int
    severity: str  # "error" | "warning" | "information" | "hint"
    category: str
    message: str
    explanation: str = ""
    fix: str = ""
    level: str | None = None
    class_name: str | None = None
    # a graph break's id in torch's graph-break registry (`GB0170`) and torch's hints for it
    gb_id: str | None = None
    hints: list[str] = field(default_factory=list)
    # fxlens's own failure (category "internal"): the Python traceback, for the server log and a bug report
    traceback: str | None = None

    @classmethod
    def at(
        cls,
        span: Span,
        severity: str,
        category: str,
        message: str,
        explanation: str = "",
        fix: str = "",
        **details: Any,
    ) -> Diagnostic:
        """A diagnostic over `span`; `details` are the other fields by name (`level=`, `class_name=`, ...)."""
        return cls(
            span.line, span.col, span.end_line, span.end_col, severity, category, message, explanation, fix, **details
        )


@dataclass
class InputSpec:
    name: str
    shape: list[int | str] | None = None
    dtype: str | None = None
    value: str | None = None  # for non-tensor inputs; a tuple of tensors is also written here, for people
    # a tuple of tensors, element by element (name "0", "1", …): what a rebuild makes it from
    parts: list[InputSpec] | None = None
    keyword: bool = False  # passed by name (forward(..., mask=...)), not by position
    # where a guessed input's shape comes from ("first used by Linear", "by its name `t`"); "" otherwise
    source: str = ""


@dataclass
class Build:
    # "directive" | "no-arguments" | "config" | "call-in-file" | "found" (a call in another file of the
    # package: `detail` says which, and what shrank) | "guessed" | "parent" | "unbuilt"
    how: str = "unbuilt"
    # "directive" | "inferred" | "parent" | "none"
    inputs_source: str = "none"
    inputs: list[InputSpec] = field(default_factory=list)
    detail: str = ""
    device: str = "meta"
    # the tensors the example ran on: "meta" (shapes only), "fake" (made from meta, for code that reads a
    # value such as `.item()`), "cpu" (small real tensors, for code that decides on values); and why
    tensors: str = "meta"
    tensors_reason: str = ""
    # the `# fxlens:` expression that reproduces this build, constructor and inputs, evaluated in the
    # file's namespace (`ViT(image_size=32, ...)(torch.randn(2, 3, 32, 32))`); "" for a parent's child
    directive: str = ""
    # each free size's value in the example ({"B": 2, "T": 8}): what "at the example size" means
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass
class Member:
    """A submodule, parameter or buffer assigned in ``__init__`` (what a hover on that line shows)."""

    name: str  # attribute path from the class ("fc", "fc.weight", "shift")
    kind: str  # "module" | "parameter" | "buffer"
    type: str = ""
    shape: list[int | str] | None = None
    dtype: str | None = None
    line: int | None = None


@dataclass
class LevelResult:
    level: str
    ok: bool
    nodes: list[Node] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    code: str = ""
    seconds: float = 0.0
    note: str = ""
    # the dynamo level's counts, as torch._dynamo.explain gives them (None for the other levels)
    graphs: int | None = None
    breaks: int | None = None
    # the ATen levels' overloads, once per distinct target (not per node): {"aten.sum.dim_IntList":
    # {"schema": "aten::sum.dim_IntList(Tensor self, ...) -> Tensor", "overloads": ["default", ...]}}
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    # fx level: per submodule instance called ("h.3.attn"), its class and the span of the line that called
    # it: {"h.3.attn": {"class": "CausalSelfAttention", "line": 70, "col": 16, "end_line": 70, "end_col": 40}}
    scopes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # dynamo level: each frame torch.compile compiled for the call, with the guards it checks before reusing it
    frames: list[CompiledFrame] = field(default_factory=list)
    # dynamo level: whether its varying sizes can vary without compiling again, run (worker/levels/recompiles.py)
    dynamic: DynamicProof | None = None


@dataclass
class Cost:
    """What one call of the module costs at the example size (`Build.sizes` names it: B=2, T=8)."""

    parameters: int = 0  # parameter elements
    trainable: int = 0  # of which require grad
    # FLOPs as torch.utils.flop_counter.FlopCounterMode counts them (forward; backward of the scalar the
    # backward level differentiates); None: not counted (`note` says why)
    forward_flops: int | None = None
    backward_flops: int | None = None
    # activation memory the forward saves for backward as torch.compile's min-cut partition chooses it
    # (the backward level's saved values); None: the backward level was not traced
    saved_bytes: int | None = None
    saved_values: int | None = None
    note: str = ""


@dataclass
class ClassReport:
    name: str
    line: int
    end_line: int
    build: Build = field(default_factory=Build)
    members: list[Member] = field(default_factory=list)
    levels: dict[str, LevelResult] = field(default_factory=dict)
    # for a class traced as the instance a parent built: that parent class (Build.detail has the path)
    built_by: str | None = None
    # the first line of the `# fxlens:` comment above the class, if it has one
    directive_line: int | None = None
    # a hash of what its trace depends on (worker/load/fingerprint.py); None: it is traced every time
    fingerprint: str | None = None
    # parameters, FLOPs and saved memory at the example size (None: not computed yet, or not built)
    cost: Cost | None = None
    # for a class fxlens has no graph for (not built, or no inputs): the directive it offers (None: it has one)
    draft: Draft | None = None
    # rewrites of its findings and their proofs (fix_report.py), when the request asked for fixes
    fixes: list[Fix] = field(default_factory=list)

    def diagnostics(self) -> list[Diagnostic]:
        return [d for result in self.levels.values() for d in result.diagnostics]


@dataclass
class FileReport:
    path: str
    classes: list[ClassReport] = field(default_factory=list)
    # problems with the file itself (syntax, import errors) or with no class in particular
    diagnostics: list[Diagnostic] = field(default_factory=list)
    python: str = ""
    torch: str = ""
    version: int = REPORT_VERSION
    # classes not traced again because their fingerprint matched the one the request carried: the
    # trace the requester already holds still stands
    unchanged: list[str] = field(default_factory=list)
    # every nn.Module class of the file, traced or not (a request for some classes traces only those)
    module_classes: list[str] = field(default_factory=list)

    def find_class(self, name: str) -> ClassReport | None:
        return next((c for c in self.classes if c.name == name), None)

    def all_diagnostics(self) -> list[Diagnostic]:
        return self.diagnostics + [d for c in self.classes for d in c.diagnostics()]


_FIELD_NAMES = {
    cls: tuple(f.name for f in fields(cls))
    for cls in (
        Span,
        Node,
        Diagnostic,
        InputSpec,
        Build,
        Member,
        LevelResult,
        Cost,
        ClassReport,
        FileReport,
        Draft,
        DraftValue,
        *FIX_CLASSES,
    )
} | {Guard: GUARD_FIELDS, CompiledFrame: FRAME_FIELDS, DynamicProof: PROOF_FIELDS}


def to_json(obj: Any) -> Any:
    """Plain data for a report object (what `dataclasses.asdict` gives, without its deep copies: a
    70B-shaped model's aten level is 5,000 nodes, and asdict took 190 ms of it)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is not None:
        return {name: to_json(getattr(obj, name)) for name in names}
    if isinstance(obj, (list, tuple)):
        return [to_json(item) for item in obj]
    if isinstance(obj, dict):
        return {key: to_json(value) for key, value in obj.items()}
    return obj


def level_from_json(data: dict[str, Any]) -> LevelResult:
    result = from_fields(LevelResult, data)
    result.nodes = [from_fields(Node, n) for n in data.get("nodes", [])]
    result.diagnostics = [from_fields(Diagnostic, d) for d in data.get("diagnostics", [])]
    result.frames = [frame_from_json(f) for f in data.get("frames", [])]
    result.dynamic = proof_from_json(data.get("dynamic"))
    return result


def input_from_json(data: dict[str, Any]) -> InputSpec:
    spec = from_fields(InputSpec, data)
    parts = data.get("parts")
    if parts is not None:
        spec.parts = [from_fields(InputSpec, part) for part in parts]
    return spec


def class_from_json(data: dict[str, Any]) -> ClassReport:
    report = from_fields(ClassReport, data)
    build = data.get("build") or {}
    report.build = from_fields(Build, build)
    report.build.inputs = [input_from_json(i) for i in build.get("inputs", [])]
    report.members = [from_fields(Member, m) for m in data.get("members", [])]
    report.levels = {k: level_from_json(v) for k, v in data.get("levels", {}).items()}
    report.cost = cost_from_json(data["cost"]) if data.get("cost") else None
    report.draft = draft_from_json(data["draft"]) if data.get("draft") else None
    report.fixes = [fix_from_json(f) for f in data.get("fixes", [])]
    return report


def cost_from_json(data: object) -> Cost:
    if not isinstance(data, dict):
        raise TypeError("a cost is an object")
    return from_fields(Cost, data)


def file_from_json(data: dict[str, Any]) -> FileReport:
    if data.get("version") != REPORT_VERSION:
        raise ValueError(f"report version {data.get('version')!r}, expected {REPORT_VERSION}")
    report = from_fields(FileReport, data)
    report.classes = [class_from_json(c) for c in data.get("classes", [])]
    report.diagnostics = [from_fields(Diagnostic, d) for d in data.get("diagnostics", [])]
    return report

"""Which passes exist: the built-ins (described here, run by worker/passes) and the workspace's own
`# fxlens: pass` functions, found from the syntax tree without running the file; and which traced
classes a pass can run on.

Stdlib only: the server lists passes for its code actions and the CLI for `--list`, neither imports torch.
"""

from __future__ import annotations

import ast
import re

from fxlens.pass_report import PassInfo
from fxlens.report import ClassReport

# the worker's table (worker/passes/__init__.py) maps each name to its entry point
BUILTIN_PASSES = (
    PassInfo("dead-code", "builtin", "graph.eliminate_dead_code(): drop nodes whose value nobody uses"),
    PassInfo(
        "fuse-linear-relu",
        "builtin",
        "fuse each Linear and the ReLU that follows it into one "
        "torch.ao.nn.intrinsic.LinearReLU node (replace_all_uses_with, eliminate_dead_code, lint, recompile)",
    ),
    PassInfo(
        "relu-to-clamp", "builtin", "replace every relu (torch.relu, F.relu, .relu(), nn.ReLU) by torch.clamp(x, min=0)"
    ),
    PassInfo(
        "prepare-fx",
        "builtin",
        "torch.ao.quantization.quantize_fx.prepare_fx with the default x86 qconfig: observers around Linear / Conv",
        quantization=True,
    ),
    PassInfo(
        "prepare-qat-fx",
        "builtin",
        "torch.ao.quantization.quantize_fx.prepare_qat_fx with the default "
        "x86 QAT qconfig: fake-quantize nodes around Linear / Conv",
        quantization=True,
    ),
)
BUILTIN_NAMES = tuple(p.name for p in BUILTIN_PASSES)

_MARK = re.compile(r"^\s*#\s*fxlens\s*:\s*pass\s*$")


def builtin(name: str) -> PassInfo | None:
    return next((p for p in BUILTIN_PASSES if p.name == name), None)


def _marked(lines: list[str], first_line: int) -> bool:
    """A `# fxlens: pass` line in the comment block directly above line `first_line` (1-based)."""
    line = first_line - 1
    while line >= 1 and lines[line - 1].lstrip().startswith("#"):
        if _MARK.match(lines[line - 1]):
            return True
        line -= 1
    return False


def user_passes(path: str, text: str) -> list[PassInfo]:
    """The top-level functions of `text` marked `# fxlens: pass` (above the `def` or its decorators)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.split("\n")
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if _marked(lines, first):
            def_line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
            start = len(def_line.encode()) - len(def_line.lstrip().encode())
            found.append(
                PassInfo(
                    node.name,
                    "user",
                    (ast.get_docstring(node) or "").split("\n")[0],
                    path=path,
                    line=node.lineno,
                    col=start,
                    end_col=len(def_line.rstrip().encode()),
                )
            )
    return found


def all_passes(path: str, text: str) -> list[PassInfo]:
    return [*BUILTIN_PASSES, *user_passes(path, text)]


def cannot_run_on(cls: ClassReport) -> str:
    """Why no pass can run on `cls` ("" when one can): a pass runs on an instance, and the analysis
    could not build one (its construction diagnostic says why)."""
    if cls.build.how != "unbuilt":
        return ""
    why = next((d.message for d in cls.diagnostics() if d.category == "construction"), "")
    return why or f"fxlens could not build {cls.name}"

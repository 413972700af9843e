"""The proof of one rewrite, in the trace child: the edited copy of the buffer loaded as the module, the
class re-traced at each level where the finding was, and the outputs compared (outputs.py).

The fixed instance is the original instance with its classes swapped for the fixed file's classes of the
same name: a rewrite never touches `__init__` (sites.Site.functions), so the fixed class would build the very
same parameters, buffers and attributes; swapping keeps the weights identical without building anything.
"""

from __future__ import annotations

import ast
import copy
import linecache
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from fxlens import lines as line_model
from fxlens.fix_report import FixProof, LevelCheck, StaleFix, TextEdit, apply_edits
from fxlens.report import LevelResult
from fxlens.worker.failures.classify import whole_line
from fxlens.worker.fixes.coverage import lines_to_run, loops_to_vary
from fxlens.worker.fixes.outputs import compare, one_thread
from fxlens.worker.levels.syntax import FileSyntax
from fxlens.worker.levels.table import TABLE, ClassContext
from fxlens.worker.load import loader
from fxlens.worker.passes.proof import ATOL, RTOL, first_line
from fxlens.worker.passes.runner import real_module


@dataclass
class FileUnderFix:
    """The traced buffer and how it was loaded: what every proof loads again, edited."""

    path: str
    text: str
    namespace: dict[str, Any]
    execution: str = "safe"
    roots: list[str] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)
    tree: ast.Module | None = None  # the text's syntax tree, when the caller has parsed it (None: parsed here)

    def syntax(self) -> ast.Module:
        if self.tree is None:
            self.tree = ast.parse(self.text)
        return self.tree


@dataclass
class Declared:
    """What a rewrite says it changes beyond the finding, which its proof then allows and says."""

    changes_inputs: tuple[str, ...] = ()  # arguments the caller no longer sees changed
    unclaimed: dict[str, str] = field(default_factory=dict)  # level: why its finding stays


@dataclass
class ClassUnderFix:
    name: str
    example: Any  # building.Example
    results: dict[str, LevelResult]  # its levels as traced


@contextmanager
def loaded_copy(name: str, file: FileUnderFix, text: str, tree: ast.Module) -> Iterator[Any]:
    """The edited text (`tree`: its parse) imported as the file's module (`name`); afterwards the original is the
    module again."""
    held, hooks, lines = sys.modules.get(name), list(sys.meta_path), linecache.cache.get(file.path)
    try:
        yield loader.load(file.path, text, file.execution, tree, file.roots, file.buffers).module
    finally:
        sys.meta_path[:] = hooks
        if held is not None:
            sys.modules[name] = held
        if lines is not None:
            linecache.cache[file.path] = lines


def swapped(module: torch.nn.Module, original: str, fixed: Any) -> torch.nn.Module:
    """`module` (a copy) with each submodule of a class of the original file made the fixed file's class."""
    for sub in module.modules():
        cls = type(sub)
        if cls.__module__ != original:
            continue
        target: Any = fixed
        for part in cls.__qualname__.split("."):
            target = getattr(target, part, None)
        if isinstance(target, type) and issubclass(target, torch.nn.Module):
            sub.__class__ = target
    return module


def _findings(result: LevelResult) -> list[tuple[int, int, str]]:
    """(line, col, what) of each finding: errors and warnings (the class notes are hints)."""
    return [
        (d.line, d.col, f"{d.category} {d.gb_id or ''} {d.message}".strip())
        for d in result.diagnostics
        if d.severity in ("error", "warning") and d.level == result.level  # (a class note names no level)
    ]


def _back(line: int, edits: list[TextEdit]) -> int:
    """The original line of a line of the edited text."""
    for edit in sorted(edits, key=lambda e: e.line):
        grown = edit.new_text.count("\n") - edit.old_text.count("\n")
        if line > edit.end_line + grown:
            line -= grown
        elif line >= edit.line:
            return edit.line
    return line


def running(text: str, edits: list[TextEdit], line: int) -> str:
    """` (it was running line 31: `with _CACHE_LOCK:`)`: where a proof that hung or crashed was, `line` being a line
    of the fixed text, said as the line of `text` it comes from ("" when unknown)."""
    try:
        fixed = line_model.split(apply_edits(text, edits))
    except StaleFix:
        return ""
    if not 0 < line <= len(fixed):
        return ""
    original = _back(line, edits)
    edited = any(e.line <= original <= e.end_line for e in edits)
    return f" (it was running line {original}{' as fixed' if edited else ''}: `{fixed[line - 1].strip()}`)"


def level_check(
    level: str, before: LevelResult, after: LevelResult, edits: list[TextEdit], unclaimed: str = ""
) -> tuple[LevelCheck, str]:
    """The check of one level, and what failed ("" when the finding is gone and none is new). `unclaimed`: why
    the rewrite leaves this level's finding (then only a new finding elsewhere fails the check)."""
    old = _findings(before)
    new = [(_back(line, edits), col, what) for line, col, what in _findings(after)]
    edited = [(e.line, e.end_line) for e in edits]
    inside = [f for f in new if any(a <= f[0] <= b for a, b in edited)]
    stopped = min((line for line, _, _ in old), default=0) if not before.ok else 0
    known = Counter(what for _, _, what in old)
    fresh = []
    for line, _, what in new:
        if known[what] > 0:
            known[what] -= 1
        elif not (stopped and line > stopped) and not any(a <= line <= b for a, b in edited):
            fresh.append(f"line {line}: {what}")
    breaks = level == "dynamo" and before.breaks is not None
    check = LevelCheck(
        level,
        "graph breaks" if breaks else f"{level} failures",
        before.breaks if breaks else len(old),  # type: ignore[arg-type]
        (after.breaks or 0) if breaks else len(new),
        [*fresh, *(f"line {line}: {what}" for line, _, what in inside)],
        after.seconds,
        before.seconds,
        unclaimed,
    )
    if unclaimed:
        return check, f"the {level} level reports a new finding: {fresh[0]}" if fresh else ""
    if inside:
        return check, f"the {level} level still reports at the fixed line: {inside[0][2]}"
    if fresh:
        return check, f"the {level} level reports a new finding: {fresh[0]}"
    if breaks and check.after >= check.before:
        return check, f"the {level} level still breaks the graph {check.after} times"
    return check, ""


def prove(
    file: FileUnderFix, cls: ClassUnderFix, edits: list[TextEdit], levels: list[str], declared: Declared | None = None
) -> FixProof:
    declared = declared or Declared()
    started = time.perf_counter()
    proof = FixProof()
    try:
        text = apply_edits(file.text, edits)
        tree = loader.parse(file.path, text)  # once: the load, the levels and the proof read this one
    except (StaleFix, SyntaxError) as error:
        proof.failed = f"the edited file does not parse: {error}"
        return _timed(proof, started)
    lines = line_model.split(text)
    where = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name), None)
    original_name = type(cls.example.instance).__module__
    # built before the copy is loaded: a rebuild evaluates its constructor in the module the name holds then
    # (a copy: the example's rebuild may hand out one instance to every caller, which the proof must not change)
    with one_thread():
        built, why_not = real_module(cls.example)
        module = copy.deepcopy(built) if built is not None else None
    proof.phases["build"] = time.perf_counter() - started
    try:
        with loaded_copy(original_name, file, text, tree) as fixed_module:
            example = cls.example
            instance = swapped(copy.deepcopy(example.instance), original_name, fixed_module)
            rebuild = example.rebuild
            fixed_example = replace(
                example,
                instance=instance,
                graph=None,
                rebuild=(lambda: swapped(copy.deepcopy(rebuild()), original_name, fixed_module)) if rebuild else None,
            )
            span = whole_line(where.lineno if where else 1, lines)
            # one context for the proof's levels (dynamo reuses fx's result); names=False: the proof reads the
            # findings, not the shapes, so no level runs the larger sizes that name them, nor dynamo's recompile
            # proof; and fx propagates no shapes unless a later level reads what propagation met
            shapes = bool({"dynamo", "inductor"} & set(levels))
            context = ClassContext(tuple(levels), syntax=FileSyntax(lines, tree), names=False, shapes=shapes)
            proof.phases["load"] = time.perf_counter() - started - proof.phases["build"]
            for level in levels:
                result = TABLE[level](fixed_example, file.path, lines, span, context)
                unclaimed = declared.unclaimed.get(level, "")
                check, failed = level_check(level, cls.results[level], result, edits, unclaimed)
                proof.levels.append(check)
                if failed:
                    proof.failed = failed
                    return _timed(proof, started)
            fixed = swapped(copy.deepcopy(module), original_name, fixed_module) if module is not None else None
            replaced = (
                file.path,
                frozenset(lines_to_run(file.syntax(), edits)),
                frozenset(loops_to_vary(file.syntax(), edits)),
            )
            ran = time.perf_counter()
            with one_thread():
                _outputs(proof, example, module, why_not, fixed, declared.changes_inputs, replaced)
            proof.phases["outputs"] = time.perf_counter() - ran
    except (Exception, SystemExit, KeyboardInterrupt) as error:  # noqa: BLE001  the edited file's own top level, a
        # level or a run raising (sys.exit() in a path only the proof runs too): not proven, and the analysis goes on
        proof.failed = proof.failed or _what_the_code_did(error, file, edits)
    return _timed(proof, started)


def _what_the_code_did(error: BaseException, file: FileUnderFix, edits: list[TextEdit]) -> str:
    """What the file's code did that ended the proof, in the user's words, at the innermost line of the file it
    ran: `the code exits the program (sys.exit("expected a 3-dimensional batch")) (it was running line 51: `…`)`."""
    fixed_line = 0
    trace = error.__traceback__
    while trace is not None:  # (the edited copy runs under the file's own path)
        if trace.tb_frame.f_code.co_filename == file.path:
            fixed_line = trace.tb_lineno
        trace = trace.tb_next
    where = running(file.text, edits, fixed_line)
    if isinstance(error, SystemExit):
        said = "" if error.code is None else repr(error.code)
        return f"the code exits the program (sys.exit({said})) while the proof runs it{where}"
    if isinstance(error, KeyboardInterrupt):
        return f"the code raises KeyboardInterrupt while the proof runs it{where}"
    return f"the code raises {first_line(error)} while the proof runs it{where}"


def _outputs(
    proof: FixProof,
    example: Any,
    module: Any,
    why_not: str,
    fixed: Any,
    changes: tuple[str, ...],
    replaced: tuple[str, frozenset[int], frozenset[int]],
) -> None:
    """`replaced`: the file's path, the lines the fix replaces (each should run on an input compared) and the loops
    whose count it replaces (each should run two numbers of times)."""
    if module is None:
        proof.failed = f"outputs not compared: {why_not}"
        return
    if example.inputs is None:
        proof.failed = "outputs not compared: fxlens has no example inputs for this class"
        return
    compared = compare(module, fixed, example, changes, *replaced)
    proof.inputs, proof.modes = compared.inputs, list(compared.modes)
    proof.outputs = compared.outputs if not compared.failed else ""
    proof.rtol, proof.atol = (RTOL, ATOL) if compared.outputs == "close" else (0.0, 0.0)
    proof.max_abs_diff = compared.max_abs_diff
    proof.state_equal, proof.printed_equal = compared.state_equal, compared.printed_equal
    proof.inputs_changed = list(compared.inputs_changed)
    proof.unreached, proof.unvaried = compared.unreached, compared.unvaried
    proof.phases["coverage"] = compared.coverage_seconds
    proof.failed = compared.failed
    proof.proven = not compared.failed


def _timed(proof: FixProof, started: float) -> FixProof:
    proof.seconds = time.perf_counter() - started
    return proof

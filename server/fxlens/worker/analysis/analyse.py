"""One analysis of one buffer: load it, build every Module class, trace the levels, emit class reports.

Runs inside the disposable child; `emit` sends one event (fxlens.messages) to the worker.

The cheap levels (fx, aten) of every class go out first; then a `stage` event says so, and only then
are the deeper levels asked for traced, class after class, each reusing what its class's cheap levels
built (levels.table.ClassContext: the instance, the exported program). A deeper level therefore never delays
another class's fx or aten result.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from fxlens import lines as line_model
from fxlens import messages
from fxlens.draft_report import Draft
from fxlens.level_info import LEVELS_LOST_WITH
from fxlens.outline import outline
from fxlens.pass_report import pass_to_json
from fxlens.report import ClassReport, Diagnostic, FileReport, LevelResult, Span, to_json
from fxlens.worker.analysis.bounds import bound_diagnostic, bound_level
from fxlens.worker.analysis.class_reports import (
    execution_off_report,
    failed_report,
    internal_failure,
    lost_level_result,
    members,
    unbuilt_report,
)
from fxlens.worker.construction import build as building
from fxlens.worker.construction import default_device, package_index, reproduce
from fxlens.worker.construction import draft as drafts
from fxlens.worker.construction.children import builders_of
from fxlens.worker.construction.classes import Building
from fxlens.worker.construction.notes import class_notes
from fxlens.worker.failures.classify import classify, whole_line
from fxlens.worker.levels.cost import class_cost
from fxlens.worker.levels.memory_bound import OverBound, limited
from fxlens.worker.levels.syntax import FileSyntax
from fxlens.worker.levels.table import TABLE, ClassContext, asked, split
from fxlens.worker.levels.values import free_sizes
from fxlens.worker.load import loader
from fxlens.worker.load.discover import ClassSource, classes_in, qualnames_by_line, the_ones_that_ran
from fxlens.worker.load.fingerprint import CodeIndex, Subject, fingerprint, index_code
from fxlens.worker.load.package_init import stand_in_diagnostic
from fxlens.worker.load.python_builtins import PythonBuiltins
from fxlens.worker.load.skipped_names import explain_skipped

Emit = Callable[[messages.Event], None]


class Analysis(Building):
    def __init__(self, request: messages.TraceRequest) -> None:
        self.path = os.path.abspath(request.path)
        # when the worker stops this trace (fxlens.timeoutSeconds): a level that can tell it will not finish
        # in time (inductor's compile) fails as a timeout itself, and the class's other levels stand
        self.deadline = time.monotonic() + request.timeout if request.timeout else None
        # a graph pass to run on the one class asked for (worker/passes): instead of tracing the levels
        self.pass_request = request.pass_request
        self.fixes = request.fixes  # each finding's rewrite, proven on a copy of the buffer (worker/fixes)
        self.roots = request.roots  # importable folders (workspace folders)
        self.guess_memory_mb = int(request.guess_memory_mb or messages.DEFAULT_GUESS_MEMORY_MB)
        # "editor" | "cli": whose words a fix uses ("check": `fxlens check`, read in a terminal and showing only
        # findings, never a shape: B and T are not named, levels/size_probe.py)
        self.surface = "cli" if request.surface in ("cli", "check") else "editor"
        self.names = request.surface != "check"
        self.package_index = package_index.Index()  # the calls of the class's package's other files (read once)
        self.buffers = request.buffers  # other open buffers, path -> text: imported instead of the files
        self.text = request.text or ""
        self.lines = line_model.split(self.text)
        self.syntax = FileSyntax(self.lines)  # parsed when a level first needs it, once for every class
        self.levels = list(asked(request.levels)) or ["fx"]  # in trace order: deeper levels reuse the export
        self.cheap, self.deep = split(tuple(self.levels))
        # the class-level hints (inputs guessed, arguments guessed) on the first level traced; a request
        # for deeper levels only, made for a server that holds the class's cheap levels, goes without
        self.notes = request.notes
        self.cost = request.cost  # the class cost (levels/cost.py): only for a caller that shows it
        # classes the server holds unchanged but without their cost (its computation was cut short): their
        # cost is counted again even when they are not traced
        self.without_cost = set(request.without_cost)
        # what `emit_costs` counts after `done`: (class, fingerprint, example, its backward level)
        self.costs_due: list[tuple[str, str | None, Any, LevelResult | None]] = []
        self.execution = request.execution
        self.only = set(request.classes) if request.classes else None
        self.first = request.first
        # class name -> the fingerprint of its last trace (the server still holds that trace)
        self.known = request.known
        self.code = CodeIndex()
        self.namespace: dict[str, Any] = {}  # the loaded file's globals
        self.functions: dict[int, str] = {}
        self.skipped: list[loader.Skipped] = []  # statements the execution policy did not run
        self.report = FileReport(self.path, python=sys.version.split()[0], torch=torch.__version__)
        # class name -> the diagnostic of its hang or crash in an earlier run of this request: left out
        self.failed: dict[str, dict] = request.failed
        # told which class the analysis works on ("" for the file's own level), so that a hang or a
        # crash is known to cost only that class (process/child_location.py)
        self.at_class: Callable[[str], None] = lambda name: None
        self.at_level: Callable[[str], None] = lambda level: None  # (and which level of it: the same page)
        # class -> the diagnostic of its compile level's hang or crash in an earlier run: that level left out
        self.lost_levels: dict[str, dict] = request.lost_levels
        # told which fix's rewrite or proof runs, and how long it may (fixes/find.py's Watch): a hang or a crash then
        # costs only that fix, which a run again reports not proven with why (`lost_proofs`)
        self.proving: Callable[[str, float, str], None] = lambda fix_id, seconds, step: None
        self.lost_proofs = messages.read_lost_proofs(request.lost_proofs)
        # what the caller keeps of every program the levels export, emitted as `warm-up-recipe` events (the
        # trace child keeps warm-up recipes for the next child); None: nothing is kept
        self.describe_program: Callable[[Any, float], dict | None] | None = None
        # taken before the user's code runs; what it replaces is put back after each step (python_builtins.py)
        self.python_builtins = PythonBuiltins()

    # -- the steps -------------------------------------------------------------------------------

    def run(self, emit: Emit) -> FileReport:
        """The file-level report; every class's report goes out through `emit` as it is made."""
        if self.execution == "off":
            return self._without_execution(emit)
        # the code's default device never reaches fxlens's runs: see construction/default_device.py
        with default_device.intercepted(self.path) as asked:
            try:
                return self._run_loaded(emit)
            finally:
                self.report.diagnostics += asked.diagnostics(self.lines)

    def _run_loaded(self, emit: Emit) -> FileReport:
        try:
            tree = loader.parse(self.path, self.text)
            # read before the user's code runs: it may patch the builtins fxlens's own code uses
            self.code = index_code(tree, self.text, outline(tree, self.text))
            loaded = loader.load(self.path, self.text, self.execution, tree, self.roots, self.buffers)
            self.namespace = loaded.module.__dict__
        except SyntaxError as error:
            self.report.diagnostics.append(syntax_diagnostic(error, error.lineno or 1))
            return self.report
        except BaseException as error:  # noqa: BLE001  anything the user's top level raises
            self.report.diagnostics.append(
                bound_diagnostic(
                    classify(error, self.path, self.lines, "load", None, whole_line(1, self.lines), self.surface)
                )
            )
            return self.report
        self.report.diagnostics += [stand_in_diagnostic(s, loaded.tree, self.lines) for s in loaded.stand_ins]
        self.functions = qualnames_by_line(loaded.tree)
        self.skipped = loaded.skipped
        for skipped in loaded.skipped:
            span = whole_line(skipped.line, self.lines)
            self.report.diagnostics.append(
                Diagnostic(
                    span.line,
                    span.col,
                    span.line,
                    span.end_col,
                    "hint",
                    "not-executed",
                    f"fxlens did not run {skipped.what} (execution policy `{self.execution}`)",
                )
            )
        sources = [
            s
            for s in the_ones_that_ran(classes_in(loaded.tree, self.text), self.namespace)
            if self._is_module(loaded.module, s)
        ]
        self.report.module_classes = [s.name for s in sources]
        if self.only is not None:
            # what the wanted classes need: themselves and the classes that can build them as children
            needed = builders_of(self.only, [s.name for s in sources], self.code)
            sources = [s for s in sources if s.name in needed]
        # every class needed is built (a child is traced as the instance its parent builds), only some traced
        examples = self._build_all([s for s in sources if s.name not in self.failed], loaded)
        if self.pass_request is not None:
            self._run_pass(self.pass_request, sources, examples, emit)
            return self.report
        wanted = [s for s in sources if self.only is None or s.name in self.only]
        # all before any trace: a forward may change a global another class's fingerprint reads
        fingerprints = {
            s.name: self._at(s.name, self._fingerprint, s, examples[s.name])
            for s in wanted
            if isinstance(examples.get(s.name), building.Example)
        }
        started: list[Started] = []
        ordered = sorted(wanted, key=lambda s: s.name != self.first)
        # those a run of this request reported whole before a fix's proof ended it: the server holds their events
        reported = {s.name for s in ordered[: self._last_lost(ordered)]}
        for source in (s for s in ordered if s.name not in reported):
            current = fingerprints.get(source.name)
            if source.name in self.failed:
                self._emit_failed(source, emit)
            elif current is not None and self.known.get(source.name) == current:
                self.report.unchanged.append(source.name)
            elif (
                one := self._at(source.name, self._trace_class, source, examples.get(source.name), current, emit)
            ) is not None:
                started.append(one)
        for recipe in (r for s in started for r in s.context.programs if r):  # only the next trace child needs these
            emit(messages.WarmUpRecipe(recipe))
        if self.deep and started:
            if self.cheap:
                emit(messages.Stage(list(self.cheap)))
            for one in started:
                self._at(one.source.name, self._trace_levels, one, self.deep, emit)
        if self.fixes:  # after every level: a proof loads the edited copy as the module for a while
            for one in started:
                self._at(one.source.name, self._fix, one, loaded.tree, emit)
        for one in started:
            one.context.close()
        if self.cost:  # counted after `done` (emit_costs): FLOPs run forward and backward once more
            self.costs_due = [
                (one.source.name, one.report.fingerprint, one.example, one.results.get("backward")) for one in started
            ]
            self.costs_due += [
                (name, fingerprints.get(name), examples[name], None)
                for name in [*(n for n in self.report.unchanged if n in self.without_cost), *reported]
                if isinstance(examples.get(name), building.Example)
            ]
        return self.report

    def emit_costs(self, emit: Emit) -> None:
        """After the file's `done`: each class's cost as its own `cost` event, so that no fx or aten
        result waits for FlopCounterMode (5-8 ms a class)."""
        for name, hashed, example, backward in self.costs_due:
            cost = self._at(name, class_cost, example, backward)
            emit(messages.ClassCost(name, to_json(cost), hashed))
        self.costs_due = []

    def _run_pass(
        self, asked: messages.PassRequest, sources: list[ClassSource], examples: dict[str, Any], emit: Emit
    ) -> None:
        from fxlens.worker.passes import runner  # torch.ao is imported only when a pass runs

        source = next((s for s in sources if self.only is None or s.name in self.only), None)
        if source is None:
            return  # no such Module class: the file report's module_classes say which there are
        # a built-in pass names no file: it is the model's
        request = replace(asked, path=asked.path or self.path, text=self.text if asked.text is None else asked.text)
        target = runner.Target(
            examples.get(source.name),
            source.name,
            self.path,
            self.lines,
            whole_line(source.line, self.lines),
            self.namespace,
            self.execution,
        )
        emit(messages.PassDone(pass_to_json(runner.run(request, target))))

    def _last_lost(self, ordered: list[ClassSource]) -> int:
        """Where in `ordered` (every run's order) the last class is whose fix ended a run (process/lost_proofs.py)."""
        lost_in = {lost.class_name for lost in self.lost_proofs.values()}
        return max((i for i, source in enumerate(ordered) if source.name in lost_in), default=0)

    def _at(self, name: str, step: Callable[..., Any], *args: Any) -> Any:
        """Run one step of class `name`'s analysis, saying so to the child's location page first."""
        self.at_class(name)
        try:
            return step(*args)
        finally:
            self.python_builtins.put_back()
            self.at_class("")

    def _emit_failed(self, source: ClassSource, emit: Emit) -> None:
        emit(messages.ClassTraced.of(failed_report(source, self.failed[source.name], self.levels, self.lines)))

    def _without_execution(self, emit: Emit) -> FileReport:
        """`execution = off` (an untrusted workspace): read the classes from the syntax tree, run nothing."""
        try:
            tree = loader.parse(self.path, self.text)
        except SyntaxError as error:
            line = min(max(error.lineno or 1, 1), max(len(self.lines), 1))
            self.report.diagnostics.append(syntax_diagnostic(error, line))
            return self.report
        modules = loader.module_like_classes(tree)
        for source in classes_in(tree, self.text):
            if source.name not in modules or (self.only is not None and source.name not in self.only):
                continue
            report = execution_off_report(source, self.levels, self.lines)
            emit(messages.ClassTraced.of(report))
        return self.report

    def _fingerprint(self, source: ClassSource, example: building.Example) -> str | None:
        inputs = (example.inputs, example.kwargs) if example.inputs is not None else None
        subject = Subject(source.name, example.instance, inputs, example.dims, example.build, example.parent)
        return fingerprint(subject, self.code, self.namespace, self.path)

    def _draft(self, source: ClassSource, example: Any) -> Draft | None:
        """The directive fxlens drafts for a class without a graph: the builds it tries are guesses, bounded."""
        try:
            with limited(self.guess_memory_mb):
                return drafts.for_class(source, example, self.namespace)
        except OverBound:  # (the class's own build says so already)
            return None

    def _trace_class(self, source: ClassSource, example: Any, hashed: str | None, emit: Emit) -> Started | None:
        """Trace one class's cheap levels, emitting its report a level at a time (each event carries the
        levels done since the last); what its deeper levels need, None when there is nothing to trace."""
        class_span = whole_line(source.line, self.lines)
        if not isinstance(example, building.Example):
            unbuilt = unbuilt_report(source, example, class_span, self.levels, self.skipped, self.execution)
            unbuilt.draft = self._draft(source, example)
            emit(messages.ClassTraced.of(unbuilt))
            return None
        report = ClassReport(source.name, source.line, source.end_line)
        report.fingerprint = hashed
        report.build = example.build
        report.built_by = example.parent
        report.directive_line = source.directive_line
        if example.inputs is not None:
            report.build.inputs = building.input_specs(
                example.instance, example.inputs, example.dims, example.kwargs, example.reasons
            )
            if example.dims:
                report.build.sizes = free_sizes(example.flat(), example.dims)
        report.build.directive = self._reproducing(source, example)
        report.draft = self._draft(source, example)
        report.members = members(source, example.instance)
        context = ClassContext(
            tuple(self.levels), self.describe_program, deadline=self.deadline, names=self.names, syntax=self.syntax
        )
        started = Started(source, example, report, class_span, context)
        self._trace_levels(started, self.cheap, emit)
        return started

    def _trace_levels(self, started: Started, levels: tuple[str, ...], emit: Emit) -> None:
        source, example, report, class_span = started.source, started.example, started.report, started.class_span
        lost = self.lost_levels.get(source.name, {})
        for level in levels:
            trace = TABLE[level]
            self.at_level(level)
            try:
                if level in LEVELS_LOST_WITH.get(lost.get("level") or "", ()):
                    result = lost_level_result(level, lost, source.name, class_span)
                else:
                    result = trace(example, self.path, self.lines, class_span, started.context)
            except Exception as error:  # noqa: BLE001  fxlens's own bug: said for this level, other classes trace on
                result = LevelResult(level, False, diagnostics=[internal_failure(error, level, class_span)])
            self.at_level("")
            bound_level(result)
            for node in result.nodes:  # export's stack traces name only `forward`, not `Block.forward`
                if node.line is not None:
                    node.function = self.functions.get(node.line, node.function)
            if level == self.levels[0] and self.notes:
                result.diagnostics += class_notes(source, example, report.build, class_span, self.lines)
            for diagnostic in result.diagnostics:
                diagnostic.class_name = source.name
                explain_skipped(diagnostic, self.skipped, self.execution)
            started.results[level] = result
            emit(messages.ClassTraced.of(replace(report, levels={level: result})))

    def _fix(self, started: Started, tree: Any, emit: Emit) -> None:
        from fxlens.worker.fixes.find import Watch, fixes_for  # (its proofs import nothing until a class has findings)
        from fxlens.worker.fixes.proof import ClassUnderFix, FileUnderFix

        file = FileUnderFix(self.path, self.text, self.namespace, self.execution, self.roots, self.buffers, tree)
        cls = ClassUnderFix(started.source.name, started.example, started.results)
        found = fixes_for(file, cls, Watch(self.deadline, self.lost_proofs, self.proving))
        if found:
            emit(messages.ClassTraced.of(replace(started.report, levels={}, fixes=found)))

    def _reproducing(self, source: ClassSource, example: building.Example) -> str:
        """The `# fxlens:` expression that rebuilds this very example ("" for a parent's child)."""
        if example.parent:
            return ""
        if example.build.how == "directive" and example.build.inputs_source == "directive":
            return source.directive or ""
        return reproduce.directive(example.build.directive, example.inputs, example.kwargs)


@dataclass
class Started:
    """A class whose cheap levels are traced: what its deeper levels reuse."""

    source: ClassSource
    example: building.Example
    report: ClassReport
    class_span: Span
    context: ClassContext
    results: dict[str, LevelResult] = field(default_factory=dict)  # its levels traced so far


def syntax_diagnostic(error: SyntaxError, line: int) -> Diagnostic:
    """The diagnostic of a text that does not parse, at `line` and the column Python gives."""
    col = max((error.offset or 1) - 1, 0)
    return Diagnostic(
        line,
        col,
        line,
        col + 1,
        "error",
        "syntax",
        f"SyntaxError: {error.msg}",
        "The file does not parse; fxlens keeps the last good result.",
    )

"""The diagnostics about how a class was built: a directive that fails or builds another class, a
build from guessed arguments, a child traced without the inputs its parent could not record."""

from __future__ import annotations

from fxlens.report import Build, Diagnostic, Span
from fxlens.worker.construction import placeholders
from fxlens.worker.construction.blame import blamed_text
from fxlens.worker.construction.build import CannotBuild, Example
from fxlens.worker.construction.directive import split_directive
from fxlens.worker.failures.classify import classify, innermost_user_frame, span_of, whole_line
from fxlens.worker.levels.memory_bound import OverBound
from fxlens.worker.load.discover import DIRECTIVE, ClassSource


def directive_column(lines: list[str], source: ClassSource) -> int:
    """UTF-8 column where the directive's expression starts on its comment line."""
    text = lines[source.directive_line - 1] if source.directive_line else ""
    prefix, _, rest = text.partition(DIRECTIVE)
    return len((prefix + DIRECTIVE).encode()) + len(rest.encode()) - len(rest.lstrip().encode())


def directive_failed(
    source: ClassSource, error: BaseException, stage: str, path: str, lines: list[str]
) -> list[Diagnostic]:
    """A directive that fails is an error at the directive's line. When the exception was raised further
    in (the class's `__init__`), the error stays at the line the traceback gives and the directive's
    line gets a note saying it failed there; a directive that builds another class is an error too."""
    span = whole_line(source.directive_line or source.line, lines)
    if isinstance(error, CannotBuild):
        return [
            Diagnostic.at(
                span,
                "error",
                "construction",
                str(error),
                "fxlens traces the class a directive builds; this one builds another.",
                f"Make the directive build {source.name}: `# fxlens: {source.name}(...)(torch.randn(...))`, "
                f"or move it above the class it builds.",
            )
        ]
    diagnostic = classify(error, path, lines, stage, None, span)
    inside = diagnostic.line != span.line
    what = "building the module" if stage == "construction" else "making its inputs or passing them to forward"
    rejected = _rejected_arguments(source, error, path) if stage == "construction" else None
    if rejected is not None:  # the arguments `__init__`'s failing line reads: the ones to change
        line, named = rejected
        what = f"building the module from its {named}"
        them = "it" if " and " not in named else "them"
        diagnostic.fix = f"Change the directive's {named}: line {line} of `{source.name}.__init__` rejects {them}."
    elif diagnostic.category == stage:  # no rule knew better than "it raised"
        diagnostic.explanation = f"The `# fxlens:` directive (line {span.line}) raised while {what}."
        diagnostic.fix = (
            f"Change the directive's constructor arguments to ones `{source.name}.__init__` accepts."
            if stage == "construction"
            else f"Change the directive's inputs to ones `{source.name}.forward` accepts."
        )
    if not inside:
        return [diagnostic]
    note = Diagnostic.at(
        span,
        "information",
        diagnostic.category,
        f"this directive failed while {what}: {diagnostic.message} (raised at line {diagnostic.line})",
        diagnostic.explanation,
        diagnostic.fix,
    )
    given = f", its {rejected[1]}" if rejected is not None else ""
    diagnostic.message += f" (from the `# fxlens:` directive at line {span.line}{given})"
    return [diagnostic, note]


def _rejected_arguments(source: ClassSource, error: BaseException, path: str) -> tuple[int, str] | None:
    try:
        call, _, _ = split_directive(source.directive or "", path)
    except SyntaxError:
        return None
    found = blamed_text(error, path, source.node, call)
    if found is None:
        return None
    line, named = found
    return line, named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


def guessed_hint(source: ClassSource, build: Build, span: Span) -> Diagnostic:
    """Guessed arguments are labelled, and one edit away from pinned: the fix is the directive."""
    return Diagnostic.at(
        span,
        "hint",
        "guessed",
        f"{source.name} was built from guessed arguments ({build.detail}): nothing in the file says what to pass",
        "The graph is the one these guesses give; other arguments may give another.",
        f"# fxlens: {build.directive}",
        class_name=source.name,
    )


def unrecorded_hint(source: ClassSource, example: Example, span: Span) -> Diagnostic:
    """A child its parent built, traced without recorded inputs: say why the parent recorded none (and,
    when fxlens guessed some instead, that the shapes are its guess)."""
    if example.inputs is not None:
        return Diagnostic.at(
            span,
            "information",
            "inputs",
            f"{source.name} is traced as {example.build.detail} on guessed inputs: {example.unrecorded}",
            "The shapes are those of fxlens's guessed inputs, not of what the parent passes.",
            f"Give {example.parent} (or {source.name}) a directive with inputs that run: "
            f"`# fxlens: {source.name}(...)(torch.randn(...))`.",
            class_name=source.name,
        )
    return Diagnostic.at(
        span,
        "warning",
        "inputs",
        f"{source.name} is traced as {example.build.detail}, but {example.unrecorded}",
        "Without inputs there are no shapes and no aten level; the fx graph needs none.",
        f"Give {example.parent} (or {source.name}) a directive with inputs that run: "
        f"`# fxlens: {source.name}(...)(torch.randn(...))`.",
        class_name=source.name,
    )


def class_notes(
    source: ClassSource, example: Example, build: Build, span: Span, lines: list[str] | None = None
) -> list[Diagnostic]:
    """The hints on how the class was built, for the first level traced: a drafted directive's inputs
    still to fill in, no inputs (recorded or guessed), guessed constructor arguments."""
    notes = []
    if example.unfilled:
        at = whole_line(source.directive_line, lines) if lines and source.directive_line else span
        notes.append(placeholders.unfilled(source.name, example.unfilled, "inputs", at))
    elif example.unrecorded and example.build.inputs_source != "parent":
        notes.append(unrecorded_hint(source, example, span))
    elif example.inputs is None:
        notes.append(_no_inputs_hint(source, example, span))
    if example.build.how == "guessed":
        notes.append(guessed_hint(source, build, span))
    return notes


def _no_inputs_hint(source: ClassSource, example: Example, span: Span) -> Diagnostic:
    problem = example.problems[-1] if example.problems else None
    why = f" (last attempt: {type(problem).__name__}: {problem})" if problem else ""
    return Diagnostic.at(
        span,
        "warning",
        "inputs",
        f"fxlens could not guess example inputs for {source.name}.forward{why}"[:400],
        "Without inputs there are no shapes and no aten level.",
        f"Add a comment above the class: `# fxlens: {source.name}(...)(torch.randn(...))`.",
        class_name=source.name,
    )


def over_bound(source: ClassSource, over: OverBound, path: str, lines: list[str]) -> Diagnostic:
    """A build without a directive that allocated past the memory bound: at the line of the class's code that
    allocated (the class line when none of the file's frames is on the way)."""
    bound = over.bound
    assert bound is not None  # `limited`, which every guessed build runs under, sets it
    frame = innermost_user_frame(over.error, path) if over.error is not None else None
    span = span_of(*frame, lines) if frame else whole_line(source.line, lines)
    return Diagnostic.at(
        span,
        "error",
        "memory",
        f"building {source.name} without a directive would pass {bound.words()}: {over.words()}",
        "With no directive, fxlens builds a class from values nobody chose (defaults, guesses) on the meta "
        "device, and lets it allocate real memory only under this bound: this constructor allocates real "
        'tensors or arrays itself (NumPy, `device="cpu"`), sized by those values.',
        f"Pin small sizes with a directive above the class, e.g. `# fxlens: {source.name}(...)`; or {bound.fix()}.",
    )

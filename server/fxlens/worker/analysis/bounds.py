"""Every text a level result carries that user values can make huge is cut where the result is made.

A node prints its arguments (`torch.tensor(TABLE)` with a 2-million-element list prints all of it),
the generated code repeats them, an exception's message may hold a repr: unbounded, one class's
event outgrows the channel. Each such text is cut to limits.MAX_TEXT_CHARS (the code line by line)
with a note saying how much was left out; the graph itself is untouched.
"""

from __future__ import annotations

from fxlens.report import Diagnostic, LevelResult
from fxlens.worker.failures.limits import MAX_TEXT_CHARS, bounded, bounded_tail


def bound_code(code: str) -> str:
    if len(code) <= MAX_TEXT_CHARS:
        return code
    return "\n".join(bounded(line) for line in code.split("\n"))


def bound_diagnostic(diagnostic: Diagnostic) -> Diagnostic:
    for name in ("message", "explanation", "fix"):
        setattr(diagnostic, name, bounded(getattr(diagnostic, name) or ""))
    diagnostic.hints = [bounded(hint) for hint in diagnostic.hints]
    if diagnostic.traceback is not None:
        diagnostic.traceback = bounded_tail(diagnostic.traceback)
    return diagnostic


def bound_level(result: LevelResult) -> LevelResult:
    for node in result.nodes:
        node.text = bounded(node.text)
        node.target = bounded(node.target)
        if node.value is not None:
            node.value = bounded(node.value)
    result.code = bound_code(result.code)
    result.note = bounded(result.note)
    for diagnostic in result.diagnostics:
        bound_diagnostic(diagnostic)
    return result

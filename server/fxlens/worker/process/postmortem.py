"""Saying what happened to a trace that did not end normally: hung, crashed, exited, ran out of memory.

Every outcome becomes one error diagnostic at the innermost line of the user's file that is known
(from the exception, or from the faulthandler dump the child wrote), in plain words, with a fix.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import sys
from dataclasses import replace
from typing import Any

from fxlens import lines as line_model
from fxlens import messages
from fxlens.report import Diagnostic, FileReport, LevelResult, Span, to_json
from fxlens.worker.failures.classify import innermost_user_frame, message_text, span_of, traceback_text, whole_line
from fxlens.worker.failures.limits import bounded_tail
from fxlens.worker.process.child_location import SAMPLE_SECONDS

__all__ = ["diagnostic_for_abort", "refine_event", "report_for_lost_child", "to_json", "too_large"]

_KEEP_OUT = (
    "Keep it out of the module's definitions, `__init__` and `forward` "
    '(e.g. under `if __name__ == "__main__":`, which fxlens never runs).'
)

# By exception type: category, explanation, fix. For errors that end the analysis of a whole file
# (raised past it) and for those the tracers reported under their stage's name.
_BY_TYPE = {
    "SystemExit": (
        "exit",
        "The code asked the interpreter to exit (sys.exit() or `raise SystemExit`), "
        "so fxlens stopped tracing this file.",
        _KEEP_OUT,
    ),
    "KeyboardInterrupt": (
        "interrupt",
        "The code raised KeyboardInterrupt, so fxlens stopped tracing this file.",
        _KEEP_OUT,
    ),
    "MemoryError": (
        "memory",
        "The code tried to allocate more memory than the trace limit allows.",
        "Avoid large real tensors and buffers (fxlens builds weights on the meta device); raise "
        "`fxlens.memoryLimitMB` if the allocation is intended.",
    ),
    "RecursionError": (
        "recursion",
        "The code calls itself without end (Python's recursion limit was hit).",
        "Check the recursion's stopping condition; under tracing a condition on a tensor value cannot stop it.",
    ),
}


def _exception_type(message: str) -> str:
    return message.split(":", 1)[0].strip()


def refine_event(event: messages.Event) -> messages.Event:
    """Give exit/interrupt/memory/recursion errors their own category, whatever stage caught them."""
    diagnostics: list[dict] = []
    classes: list[dict] = []
    if isinstance(event, messages.Done):
        diagnostics += event.report.get("diagnostics", [])
        classes += event.report.get("classes", [])
    elif isinstance(event, messages.ClassTraced):
        classes.append(event.report)
    for cls in classes:
        for level in cls.get("levels", {}).values():
            diagnostics += level.get("diagnostics", [])
    for diagnostic in diagnostics:
        known = _BY_TYPE.get(_exception_type(diagnostic.get("message", "")))
        if known is not None and diagnostic.get("category") != known[0]:
            diagnostic["category"], diagnostic["explanation"], diagnostic["fix"] = known
    return event


def too_large(event: messages.Event, size: int) -> messages.Event | None:
    """What to send instead of an event over the channel's limit: the class (or the file) fails with a
    diagnostic saying so; a warm-up is only an optimisation and is dropped."""
    from fxlens.worker.failures.limits import MAX_EVENT_BYTES

    what = f"{size / (1 << 20):.1f} MB, over fxlens's limit of {MAX_EVENT_BYTES >> 20} MB"
    explanation = (
        "Something this code makes is huge as text: a node's arguments as torch prints them (a long "
        "Python list or string passed to an op), a constant, or an error message."
    )
    fix = "Keep large Python data out of forward's arguments (make it a tensor buffer), then retrace."
    if isinstance(event, messages.ClassTraced):
        cls = event.report
        line = cls.get("line", 1)
        levels = {}
        for name in cls.get("levels", {}):
            message = f"the report of {cls.get('name')}'s {name} level is {what}"
            levels[name] = to_json(
                LevelResult(
                    name,
                    False,
                    diagnostics=[
                        Diagnostic(
                            line, 0, line, 0, "error", "too-large", message, explanation, fix, name, cls.get("name")
                        )
                    ],
                )
            )
        return messages.ClassTraced({**{k: cls.get(k) for k in ("name", "line", "end_line")}, "levels": levels})
    if isinstance(event, messages.Done):
        report = event.report
        diagnostic = Diagnostic(
            1, 0, 1, 0, "error", "too-large", f"the report of this file is {what}", explanation, fix
        )
        return replace(
            event,
            report={
                **report,
                "diagnostics": [to_json(diagnostic)],
                "classes": [],
                "unchanged": report.get("unchanged", []),
            },
        )
    return None


def diagnostic_for_abort(error: BaseException, request: messages.TraceRequest) -> dict:
    """In the child: the diagnostic for an exception that escaped the whole analysis."""
    path = os.path.abspath(request.path)
    lines = line_model.split(request.text or "")
    frame = innermost_user_frame(error, path)
    span = span_of(*frame, lines) if frame else whole_line(1, lines)
    kind = type(error).__name__
    category, explanation, fix = _BY_TYPE.get(
        kind,
        (
            "internal",
            "fxlens itself failed while analysing this file; this is a bug in fxlens.",
            "Please report it with this file; other files are not affected.",
        ),
    )
    message = message_text(error)
    if isinstance(error, SystemExit) and kind == "SystemExit":
        message = f"SystemExit (exit status {error.code!r}): the code under trace called sys.exit()"
    diagnostic = Diagnostic.at(span, "error", category, message, explanation, fix)
    if category == "internal":
        diagnostic.traceback = bounded_tail(traceback_text(error))
    return to_json(diagnostic)


_DUMP_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_CRASH_SIGNALS: dict[int, str] = {
    signal.SIGSEGV: "a segmentation fault (SIGSEGV): native code read or wrote memory it does not own",
    signal.SIGBUS: "a bus error (SIGBUS): native code accessed invalid memory",
    signal.SIGILL: "an illegal instruction (SIGILL) in native code",
    signal.SIGFPE: "a floating-point exception (SIGFPE) in native code",
    signal.SIGABRT: "an abort (SIGABRT): native code or os.abort() gave up",
}


def read_dump(dump_fd: int, path: str, text: str) -> tuple[int | None, str]:
    """(innermost line of `path`, the child's note) from the last stack the child dumped.

    faulthandler prints the most recent call first: the first frame of `path` is the innermost.
    The child writes a note line (`os._exit(3) called`) before the stacks it dumps on purpose."""
    try:
        # pread: the child shares this descriptor's offset, and may still be writing at it
        dump = os.pread(dump_fd, os.fstat(dump_fd).st_size, 0).decode(errors="replace")
    except OSError:
        return None, ""
    notes = [line for line in dump.splitlines() if line.endswith(" called")]
    frames = [int(m.group("line")) for m in _DUMP_FRAME.finditer(dump) if os.path.abspath(m.group("file")) == path]
    # a frame at its function's first line (the location sampler's `co_firstlineno` rule) is entering it: its caller's
    # line is the one running
    starts = _function_first_lines(text) if frames else set()
    running = [line for line in frames if line not in starts] or frames
    return (running[0] if running else None), (notes[-1] if notes else "")


def _function_first_lines(text: str) -> set[int]:
    """Each function's `co_firstlineno`: its first decorator's line, else its `def` line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    return {
        min([node.lineno, *(d.lineno for d in node.decorator_list)])
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_death(
    status: int, grown_kb: int, memory_mb: int, where: str, note: str = "", limits_note: str = ""
) -> tuple[str, str, str]:
    """(category, message, fix) for a child that died without a report.

    `grown_kb` is how much the child's peak resident size exceeded the worker's when it was forked:
    an outside SIGKILL after large growth is the kernel's out-of-memory killer; otherwise it is not.
    `where` places it: "on this line", "after this line ran", "(the line is unknown)".
    """
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if note.startswith("os.kill"):
            return (
                "exit",
                f"the code under trace killed its own process with {_signal_name(number)} {where}",
                _KEEP_OUT,
            )
        cpu_limit = next((n for n in limits_note.split("; ") if n.startswith("RLIMIT_CPU")), "")
        if number in (signal.SIGKILL, signal.SIGXCPU) and cpu_limit:
            return (
                "exit",
                f"the trace process was stopped by the CPU-time limit the code set on it ({cpu_limit}) {where}",
                _KEEP_OUT,
            )
        if number == signal.SIGKILL:
            ram_kb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
            budget_kb = min(memory_mb * 1024 if memory_mb > 0 else ram_kb, ram_kb)
            if grown_kb * 2 >= budget_kb:
                return (
                    "memory",
                    f"the trace process was killed by the system after growing by "
                    f"{grown_kb // 1024} MB: the machine ran out of memory",
                    "Lower `fxlens.memoryLimitMB` so fxlens stops the trace first, and avoid large real "
                    "tensors (fxlens builds weights on the meta device).",
                )
            return (
                "crash",
                "the trace process was killed (SIGKILL) by something outside fxlens",
                "Nothing in the file needs fixing if you killed it; otherwise look for code that kills "
                "its own process.",
            )
        description = _CRASH_SIGNALS.get(number, f"the signal {_signal_name(number)}")
        return (
            "crash",
            f"the trace process crashed {where} with {description}",
            "Native code (ctypes, a C extension, a custom op) crashed the interpreter; keep it out of "
            "the module's definitions and forward, or guard it from tracing.",
        )
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return (
        "exit",
        f"the code under trace ended the process {where} with exit status {code} "
        "(os._exit or a C library exit), before any report",
        _KEEP_OUT,
    )


def _blind_spots(pid: int, dump_fd_gone: bool, samples: int, notes: str) -> str:
    """In plain words, what the code did that kept fxlens from seeing its line ("" when nothing)."""
    found = []
    if "faulthandler.disable()" in notes:
        found.append("it turned off faulthandler (faulthandler.disable()), which dumps the stack of a crash")
    if dump_fd_gone:
        found.append("it closed file descriptors it did not open (fxlens's stack-dump file among them)")
    try:
        with open(f"/proc/{pid}/status") as status:
            masks = {
                k: int(v, 16)
                for k, v in (line.split(":\t", 1) for line in status if line[:6] in ("SigIgn", "SigBlk", "SigCgt"))
            }
        bit = 1 << (signal.SIGUSR1 - 1)
        if masks.get("SigIgn", 0) & bit or masks.get("SigBlk", 0) & bit:
            found.append("it ignores or blocks SIGUSR1 (fxlens's request for a stack dump)")
    except (OSError, ValueError):
        pass
    if samples <= 1:
        found.append(
            "it ended before fxlens's sampling thread (which looks every "
            f"{SAMPLE_SECONDS * 1000:g} ms) saw a line of this file"
        )
    return "; ".join(found)


_LAST_SEEN = {
    "running": "; this line was still running",
    "raised": "; this line had raised an error that fxlens was still reading (a very deep recursion leaves a very "
    "long traceback)",
    "after": "; this is the last line of the class fxlens saw running, and fxlens's own code ran after it (a very "
    "deep recursion that ended in an error, or a slow trace of code that had already run)",
}


def lost_child_diagnostic(
    job: Any, reason: str | None, status: int, grown_kb: int, dump_fd_gone: bool = False
) -> tuple[Diagnostic, str]:
    """The diagnostic for a child that never said `done`, and the class it was working on ("" for the
    file's top level): where it stopped, from its last stack dump, else from its location page."""
    if job.aborted is not None:  # the child said why itself
        return Diagnostic(**job.aborted), ""
    path = os.path.abspath(job.request.path)
    lines = line_model.split(job.request.text)
    dumped, note = read_dump(job.dump_fd, path, job.request.text)
    working_on, sampled, samples, limits_note, state = job.location.read()
    known = dumped or sampled or None
    # a stack dump shows the line running; the location page may know only the line seen last
    # (see child_location.STATES)
    state = "running" if dumped else state
    # line 0 when unknown: the class's line, if a class was running, else the file's first line
    span = whole_line(known, lines) if known else Span(0, 0, 0, 0)
    blind = "" if known else _blind_spots(job.pid, dump_fd_gone, samples, limits_note)
    unknown = f" (fxlens could not tell which line was running: {blind})" if blind else ""
    if reason is not None:
        category = "timeout"
        message = f"fxlens stopped the trace: {reason}" + (_LAST_SEEN[state] if known else unknown)
        fix = (
            "Look for an endless loop or a blocking call (sleep, input, network) here; raise "
            "`fxlens.timeoutSeconds` if the code is just slow."
        )
        explanation = "The trace did not finish in time, so fxlens killed it and everything it started."
    else:
        where = "(the line is unknown)" if not known else "after this line ran" if state == "after" else "on this line"
        category, message, fix = describe_death(
            status, grown_kb, int(job.request.memory_mb or 0), where, note, limits_note
        )
        message += unknown
        explanation = "The trace process ended without a report; fxlens discarded that run."
    return Diagnostic.at(span, "error", category, message, explanation, fix), working_on


def report_for_lost_child(job: Any, diagnostic: Diagnostic) -> dict:
    """The file-level report for a child that never said `done` (the classes it finished have reached
    the server already)."""
    report = FileReport(os.path.abspath(job.request.path), python=sys.version.split()[0])
    if diagnostic.line == 0:
        lines = line_model.split(job.request.text)
        whole_line(1, lines).copy_to(diagnostic)
    report.diagnostics.append(diagnostic)
    return to_json(report)

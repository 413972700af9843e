"""Files whose trace kills the worker itself are held back, so that a restart storm never ends with
innocent files untraced.

A trace runs in a disposable child, and the worker shields itself from the signals a trace can send
(worker/process/shield.py); what still gets through (a `kill -9` of the worker from a shell the code starts)
ends the worker while that file's trace is in flight. Such a death counts against the files then in
flight: a file in flight alone counts fully, several are each traced alone next time, to tell which
one did it. A file that killed the worker DEATHS_TO_HOLD times is held: that text gets a diagnostic
instead of a trace (any edit tries again), and the worker is restarted for everybody else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report import Diagnostic, FileReport

DEATHS_TO_HOLD = 2


@dataclass
class Quarantine:
    deaths: dict[str, int] = field(default_factory=dict)  # path -> worker deaths while traced alone
    suspects: set[str] = field(default_factory=set)  # in flight with others at a death: traced alone next
    held: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (text, how the worker died)

    def record_death(self, in_flight: list[tuple[str, str]], how: str) -> None:
        """The worker died with these (path, text) traces in flight."""
        paths = {path for path, _ in in_flight}
        if len(paths) != 1:
            self.suspects |= paths
            return
        path, text = in_flight[-1]  # (the newest text, should an older trace of it still be in flight)
        self.suspects.discard(path)
        self.deaths[path] = self.deaths.get(path, 0) + 1
        if self.deaths[path] >= DEATHS_TO_HOLD:
            self.held[path] = (text, how)

    def runs_alone(self, path: str) -> bool:
        return path in self.suspects or path in self.deaths

    def traced(self, path: str) -> None:
        """A trace of `path` ended normally: it is not what kills the worker (or no longer)."""
        self.suspects.discard(path)
        self.deaths.pop(path, None)

    def report_for(self, path: str, text: str) -> FileReport | None:
        """The report that stands in for a trace of a held text (None: trace it)."""
        held = self.held.get(path)
        if held is None:
            return None
        if held[0] != text:
            del self.held[path]  # edited: one more try (a single death holds it again)
            self.deaths[path] = DEATHS_TO_HOLD - 1
            return None
        report = FileReport(path)
        report.diagnostics.append(
            Diagnostic(
                1,
                0,
                1,
                0,
                "error",
                "crash",
                f"fxlens stopped tracing this file: tracing it killed fxlens's worker process {self.deaths[path]} "
                f"times ({held[1]}); other files are traced as usual",
                "The code under trace ended the worker that runs the traces (with a signal it cannot block, from a "
                "process the code started), so fxlens no longer runs this text. fxlens tries again after any edit.",
                "Look for code that kills its parent process (`kill -9 $PPID`, `os.kill(os.getppid(), ...)` through "
                "a shell or ctypes) and keep it out of the module's definitions, `__init__` and `forward`.",
            )
        )
        return report

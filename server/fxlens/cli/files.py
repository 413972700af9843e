"""What the CLI's commands share: reading the file asked for, and the problems that stop a command (exit 2)."""

from __future__ import annotations

import os

from fxlens.render.graph_text import diagnostics_text
from fxlens.report import FileReport

USAGE_ERROR = 2  # the exit status of a CliError


class CliError(Exception):
    """A problem the user must fix before fxlens can run (exit status 2)."""


def read_file(path: str) -> str:
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def syntax_error(report: FileReport) -> str | None:
    for d in report.diagnostics:
        if d.category == "syntax":
            return f"{report.path}:{d.line}:{d.col + 1}: {d.message}"
    return None


def load_error(report: FileReport) -> str | None:
    """The file's top level raised (an ImportError, ...): the diagnostic, with its explanation and fix."""
    failed = [d for d in report.diagnostics if d.category == "load" and d.severity == "error"]
    if not failed:
        return None
    return diagnostics_text(report.path, failed[:1])

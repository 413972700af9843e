"""`fxlens check --fix` and `--diff`, ruff's way: the proven fixes of every file applied in place (and what
changed said), or their unified diff printed and nothing written. The same edits as the editor's quick fixes
(engine/fixes.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from fxlens.engine.fixes import apply_all, explained, remaining
from fxlens.fix_report import Fix, unified_diff
from fxlens.report import FileReport


def add_arguments(check: argparse.ArgumentParser) -> None:
    edits = check.add_mutually_exclusive_group()
    edits.add_argument(
        "--fix",
        action="store_true",
        help="apply the proven fixes in place (each re-traced and output-checked first) and say what changed",
    )
    edits.add_argument("--diff", action="store_true", help="print the proven fixes as a unified diff; write nothing")
    edits.add_argument(
        "--show-fixes",
        action="store_true",
        help="prove a fix for each finding and show it under the finding (JSON and SARIF: its edits and proof)",
    )


def fixed_line(path: str, fix: Fix) -> str:
    return f"{path}:{fix.line}:{fix.col + 1}: fixed [{fix.rule}] {fix.label()} ({fix.class_name})"


def print_diffs(texts: dict[str, str], reports: dict[str, FileReport], out: TextIO = sys.stdout) -> int:
    """Every file's proven fixes as one unified diff; the number of fixes in it."""
    count = 0
    for path, text in texts.items():
        after, applied = apply_all(text, reports[path])
        if applied:
            out.write(unified_diff(os.path.relpath(path).replace(os.sep, "/"), text, after))
            count += len(applied)
    return count


def apply_in_place(
    texts: dict[str, str], reports: dict[str, FileReport], said: TextIO = sys.stderr
) -> tuple[dict[str, FileReport], int]:
    """Every file's proven fixes written to it; the reports as the fixed files stand, and how many were applied."""
    left: dict[str, FileReport] = {}
    count = 0
    for path, text in texts.items():
        after, applied = apply_all(text, reports[path])
        if applied:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(after)
            for fix in applied:
                said.write(fixed_line(os.path.relpath(path), fix) + "\n")
            count += len(applied)
        left[path] = remaining(explained(reports[path]), applied)
    return left, count

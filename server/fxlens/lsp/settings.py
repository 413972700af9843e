"""Typed settings with defaults; a bad value is reported and replaced by its default, never fatal,
and a value too small to trace anything with is reported and raised to the smallest that works.

Accepted shapes (clients differ): `{"fxlens": {"python": ...}}`, `{"fxlens.python": ...}` and the
flat `{"python": ...}` that some clients put in initializationOptions.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from fxlens.engine.worker_client import TraceOptions
from fxlens.report import DEFAULT_LEVELS, LEVELS, in_ladder_order

EXECUTION_MODES = ("safe", "full", "off")
KEYS = ("python", "levels", "timeoutSeconds", "execution", "inlayHints", "memoryLimitMB", "diffLens")


@dataclass(frozen=True)
class Settings:
    python: str = field(default_factory=lambda: sys.executable)
    levels: tuple[str, ...] = DEFAULT_LEVELS
    timeout_seconds: float = 60.0
    execution: str = "safe"
    inlay_hints: bool = False
    memory_limit_mb: int = 4096
    diff_lens: bool = False  # a lens "vs HEAD: +12 nodes, +1 break" on classes whose graph differs from the last commit

    def trace_options(self) -> TraceOptions:
        return TraceOptions(levels=self.levels, execution=self.execution, timeout=self.timeout_seconds,
                            memory_mb=self.memory_limit_mb)


def _section(raw: Any) -> dict:
    if not isinstance(raw, dict):
        return {}
    found: dict = {}
    nested = raw.get("fxlens")
    if isinstance(nested, dict):
        found.update(nested)
    for key, value in raw.items():
        if key.startswith("fxlens.") and key[len("fxlens."):] in KEYS:
            found[key[len("fxlens."):]] = value
        elif key in KEYS:
            found.setdefault(key, value)
    return found


def has_settings(raw: Any) -> bool:
    """Did the client push settings (even an empty section), or must we pull them?"""
    return isinstance(raw, dict) and ("fxlens" in raw or bool(_section(raw)))


def _python(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return value.strip() or sys.executable
    return None


def _levels(value: Any) -> Optional[tuple[str, ...]]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)) and value and all(v in LEVELS for v in value):
        return in_ladder_order(value)  # the order they are traced and shown in
    return None


def _positive(kind: type, most: float):
    # bounded, because the worker hands these to select() and setrlimit(), which reject huge values
    def check(value: Any):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
            return None
        return kind(value)
    return check


def _execution(value: Any) -> Optional[str]:
    return value if value in EXECUTION_MODES else None


def _flag(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


# key -> (Settings field, validator returning None for a bad value, what a good value looks like)
_FIELDS = {
    "python": ("python", _python, "a path to a Python interpreter"),
    "levels": ("levels", _levels, f"a list drawn from {', '.join(LEVELS)}"),
    "timeoutSeconds": ("timeout_seconds", _positive(float, 86400), "a number of seconds in (0, 86400]"),
    "execution": ("execution", _execution, " | ".join(EXECUTION_MODES)),
    "inlayHints": ("inlay_hints", _flag, "true or false"),
    "memoryLimitMB": ("memory_limit_mb", _positive(int, 1 << 30), "a positive number of megabytes"),
    "diffLens": ("diff_lens", _flag, "true or false"),
}


# key -> (the smallest value a trace can work with, why): below it every trace would fail, and say
# "timeout" or "out of memory" about code that is fine
_MINIMUMS = {
    "timeoutSeconds": (1.0, "the first export of a small module takes about a second"),
    "memoryLimitMB": (256, "torch.export alone needs a few hundred megabytes on top of the worker"),
}


def _at_least(key: str, value: Any, parsed: Any, warnings: list[str]) -> Any:
    if key not in _MINIMUMS or value >= _MINIMUMS[key][0]:
        return parsed
    least, why = _MINIMUMS[key]
    warnings.append(f"fxlens.{key}: {value!r} is too small to trace with ({why}); using {least!r}.")
    return least


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """The settings a client sent (missing keys take defaults) and a warning per bad value."""
    defaults = Settings()
    values = _section(raw)
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in values.items():
        if key not in _FIELDS or value is None:
            continue
        name, check, expected = _FIELDS[key]
        parsed = check(value)
        if parsed is None:
            warnings.append(f"fxlens.{key}: {value!r} is not valid (expected {expected}); "
                            f"using the default {getattr(defaults, name)!r}.")
        else:
            changes[name] = _at_least(key, value, parsed, warnings)
    return replace(defaults, **changes), warnings


def with_root(settings: Settings, root: Optional[str]) -> Settings:
    """A relative interpreter path (`.venv/bin/python`) means relative to the workspace, not to
    wherever the editor started the server; a bare name (`python3`) is looked up on PATH."""
    python = settings.python
    if root and os.sep in python and not os.path.isabs(python):
        return replace(settings, python=os.path.normpath(os.path.join(root, python)))
    return settings

"""Typed settings with defaults; a bad value is reported and replaced by its default, never fatal,
and a value too small to trace anything with is reported and raised to the smallest that works.

`SETTINGS` is the one place a setting is declared: the parsing here, VS Code's `contributes.configuration`
(vscode-client/package.json) and the table of docs/settings.md come from it (`python3 scripts/generate.py`).

Accepted shapes (clients differ): `{"fxlens": {"python": ...}}`, `{"fxlens.python": ...}` and the
flat `{"python": ...}` that some clients put in initializationOptions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from fxlens.engine.worker_client import TraceOptions
from fxlens.messages import DEFAULT_GUESS_MEMORY_MB
from fxlens.report import DEFAULT_LEVELS, LEVELS, in_ladder_order

EXECUTION_MODES = ("safe", "full", "off")


@dataclass(frozen=True)
class Settings:
    python: str = field(default_factory=lambda: sys.executable)
    levels: tuple[str, ...] = DEFAULT_LEVELS
    timeout_seconds: float = 60.0
    execution: str = "safe"
    inlay_hints: bool = False
    memory_limit_mb: int = 4096
    guess_memory_mb: int = DEFAULT_GUESS_MEMORY_MB
    diff_lens: bool = False  # a lens "vs HEAD: +12 nodes, +1 break" on classes whose graph differs from the last commit
    quick_fixes: bool = True  # each finding's rewrite proven after the levels are out, offered as a quick fix

    def trace_options(self) -> TraceOptions:
        return TraceOptions(
            levels=self.levels,
            execution=self.execution,
            timeout=self.timeout_seconds,
            memory_mb=self.memory_limit_mb,
            guess_memory_mb=self.guess_memory_mb,
            fixes=self.quick_fixes,
        )


def _python(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or sys.executable
    return None


def _levels(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)) and value and all(v in LEVELS for v in value):
        return in_ladder_order(value)  # the order they are traced and shown in
    return None


def _positive(kind: type, most: float) -> Callable[[Any], Any]:
    # bounded, because the worker hands these to select() and setrlimit(), which reject huge values
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
            return None
        return kind(value)

    return check


def _execution(value: Any) -> str | None:
    return value if value in EXECUTION_MODES else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class Minimum:
    """The smallest value a trace can work with: below it every trace would fail, and say "timeout" or
    "out of memory" about code that is fine."""

    value: float
    why: str


@dataclass(frozen=True)
class Setting:
    """One setting, `fxlens.<key>` in the client, `Settings.<field>` here."""

    key: str
    field: str
    check: Callable[[Any], Any]  # the typed value, or None for a bad one
    expected: str  # what a good value looks like, for the warning about a bad one
    description: str  # Markdown, one paragraph: VS Code's settings editor and docs/settings.md
    schema: dict[str, Any]  # the JSON schema VS Code checks the value with (`type`, `enum`, ...), default aside
    minimum: Minimum | None = None
    # the client's default where it differs from the server's: VS Code leaves `python` empty and picks one
    client_default: Any = None
    default_words: str = ""  # the default, in words, where its value depends on the machine

    def default(self) -> Any:
        """The default a client shows (JSON): the server's unless the client has its own."""
        if self.client_default is not None:
            return self.client_default
        value = getattr(Settings(), self.field)
        if isinstance(value, float) and value.is_integer():
            return int(value)  # JSON's 60, not 60.0
        return list(value) if isinstance(value, tuple) else value


SETTINGS = (
    Setting(
        "python",
        "python",
        _python,
        "a path to a Python interpreter",
        "The interpreter whose torch and packages build and trace your modules. VS Code: the Python extension's "
        "choice for the workspace comes first (followed when it changes), then this setting, then `python3`; "
        "other editors: empty means the interpreter running the server.",
        {"type": "string", "scope": "machine-overridable"},
        client_default="",
        default_words="the interpreter running the server",
    ),
    Setting(
        "levels",
        "levels",
        _levels,
        f"a list drawn from {', '.join(LEVELS)}",
        f"Levels to trace with every edit, from {', '.join(f'`{name}`' for name in LEVELS)} (shown in that "
        "order; the deeper ones after fx and aten). The others are computed when a hover or the graph view "
        "wants them (inductor: only the graph view).",
        {"type": "array", "items": {"type": "string", "enum": list(LEVELS)}},
    ),
    Setting(
        "timeoutSeconds",
        "timeout_seconds",
        _positive(float, 86400),
        "a number of seconds in (0, 86400]",
        "Seconds one trace of one file may run before it is stopped.",
        {"type": "number"},
        Minimum(1, "the first export of a small module takes about a second"),
    ),
    Setting(
        "memoryLimitMB",
        "memory_limit_mb",
        _positive(int, 1 << 30),
        "a positive number of megabytes",
        "Megabytes the process that runs one trace may allocate beyond the worker's own.",
        {"type": "number"},
        Minimum(256, "torch.export alone needs a few hundred megabytes on top of the worker"),
    ),
    Setting(
        "guessMemoryMB",
        "guess_memory_mb",
        _positive(int, 1 << 30),
        "a positive number of megabytes",
        "Megabytes of real memory fxlens may spend on a guess: building a class that has no directive (its "
        "constructor's own NumPy arrays or CPU tensors, sized by defaults nobody chose), and real CPU "
        "weights in place of meta ones for code the meta device cannot run. Past it the class says so.",
        {"type": "number"},
        Minimum(16, "a small model's real CPU weights take a few megabytes"),
    ),
    Setting(
        "execution",
        "execution",
        _execution,
        " | ".join(EXECUTION_MODES),
        "How much of your file runs before tracing: `safe`, `full` or `off` (fxlens's security "
        "model says what each runs). An untrusted VS Code workspace always gets `off`.",
        {
            "type": "string",
            "enum": list(EXECUTION_MODES),
            "enumDescriptions": [
                "Run only imports, definitions, assignments and torch.fx.wrap calls of the file.",
                "Import the whole file (except the __main__ block).",
                "Run nothing: no tracing (what an untrusted workspace gets).",
            ],
        },
    ),
    Setting(
        "inlayHints",
        "inlay_hints",
        _flag,
        "true or false",
        "Show the shape a line assigns as an inlay hint, `(B, 16) f32`.",
        {"type": "boolean"},
    ),
    Setting(
        "diffLens",
        "diff_lens",
        _flag,
        "true or false",
        "Show a lens `vs HEAD: +12 nodes, +1 break` over each class whose graphs differ from the file's last "
        "commit (the HEAD text is traced once per commit, under the file's path; see `fxlens diff`).",
        {"type": "boolean"},
    ),
    Setting(
        "quickFixes",
        "quick_fixes",
        _flag,
        "true or false",
        "Offer quick fixes for graph breaks and fx failures (`torch.where` for a tensor `if`, `print` skipped "
        "while compiling, ...), each proven first: fxlens applies it to a copy of the buffer, re-traces the "
        "class and compares outputs and module state on three inputs, after the levels are shown.",
        {"type": "boolean"},
    ),
)
_BY_KEY = {setting.key: setting for setting in SETTINGS}
assert sorted(s.field for s in SETTINGS) == sorted(f.name for f in fields(Settings)), "every Settings field is declared"


def _section(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    found: dict[str, Any] = {}
    nested = raw.get("fxlens")
    if isinstance(nested, dict):
        found.update(nested)
    for key, value in raw.items():
        if key.startswith("fxlens.") and key[len("fxlens.") :] in _BY_KEY:
            found[key[len("fxlens.") :]] = value
        elif key in _BY_KEY:
            found.setdefault(key, value)
    return found


def has_settings(raw: Any) -> bool:
    """Did the client push settings (even an empty section), or must we pull them?"""
    return isinstance(raw, dict) and ("fxlens" in raw or bool(_section(raw)))


def _at_least(setting: Setting, value: Any, parsed: Any, warnings: list[str]) -> Any:
    least = setting.minimum
    if least is None or value >= least.value:
        return parsed
    raised = type(parsed)(least.value)
    warnings.append(f"fxlens.{setting.key}: {value!r} is too small to trace with ({least.why}); using {raised!r}.")
    return raised


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """The settings a client sent (missing keys take defaults) and a warning per bad value."""
    defaults = Settings()
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in _section(raw).items():
        setting = _BY_KEY.get(key)
        if setting is None or value is None:
            continue
        parsed = setting.check(value)
        if parsed is None:
            warnings.append(
                f"fxlens.{key}: {value!r} is not valid (expected {setting.expected}); "
                f"using the default {getattr(defaults, setting.field)!r}."
            )
        else:
            changes[setting.field] = _at_least(setting, value, parsed, warnings)
    return replace(defaults, **changes), warnings


def with_root(settings: Settings, root: str | None) -> Settings:
    """A relative interpreter path (`.venv/bin/python`) means relative to the workspace, not to
    wherever the editor started the server; a bare name (`python3`) is looked up on PATH."""
    python = settings.python
    if root and os.sep in python and not os.path.isabs(python):
        return replace(settings, python=os.path.normpath(os.path.join(root, python)))
    return settings

"""Python's builtins stay Python's: a builtin the user's code replaces is put back before fxlens goes on.

User code runs in the process that analyses it, and a builtin is looked up in one dictionary by every module:
a file's `builtins.len = lambda obj: -1` reaches fxlens's machinery and the standard library it calls
(pathlib's glob, traceback, json), which then fail where the user's code did not. So the builtins are taken
as they are before any user code runs, and what the code replaced or deleted is put back after its top level
ran and after each step of a class's analysis (construction, a level, a proof). A name the code adds (a
`builtins.profile = lambda f: f` shim) stays: nothing of fxlens looks it up, and the code may need it later.
"""

from __future__ import annotations

import builtins

_MISSING = object()


class PythonBuiltins:
    """The builtins as they were when this was made (before the user's code ran)."""

    def __init__(self) -> None:
        self._before = dict(builtins.__dict__)

    def put_back(self) -> None:
        """Undo what was replaced or deleted since (uses no builtin: they may be the user's now)."""
        now = builtins.__dict__
        for name, value in self._before.items():
            if now.get(name, _MISSING) is not value:
                now[name] = value

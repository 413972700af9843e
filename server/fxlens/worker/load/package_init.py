"""A package `__init__` that fails for its own reason does not stop the file under it from loading.

Importing `pkg.sub.model` runs `pkg/__init__.py` first; when that `__init__` pulls in something the
machine lacks (a predictor needing torchvision, an optional tokenizer) the model file never runs,
although it needs nothing of it. Python itself loads such a file fine by path. So, when the failure
is inside an ancestor `__init__` (the edited file never started running):
- a file with no relative import loads by its path, as a top-level module, as `python model.py` would;
- a file with relative imports gets an empty stand-in for each failing `__init__` (a package of the
  right `__path__`, so `from .layers import X` still finds `pkg/layers.py`);
and the load says so, naming the import chain that failed (`pkg/__init__.py:3 → predictor.py:9`).
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass

from fxlens.report import Diagnostic
from fxlens.worker.failures.classify import message_text
from fxlens.worker.load import imports

# one stand-in per level of the package path at most: past that the failure is the file's own
MAX_STAND_INS = 16


@dataclass
class StandIn:
    """A package whose `__init__` failed, and how fxlens got past it."""

    package: str  # "pkg" ("" when the file was loaded by path instead)
    chain: str  # "pkg/__init__.py:3 → pkg/predictor.py:9" (paths relative to the package's root)
    error: str  # "ModuleNotFoundError: No module named 'torchvision'"
    how: str  # "stand-in" | "by-path"


def _failing_init(error: BaseException, own_path: str, placement: imports.Placement) -> tuple[str, list] | None:
    """(the ancestor package whose `__init__` raised, the traceback frames from there on), or None when
    the failure is not an ancestor's own: the edited file started running, or no ancestor raised."""
    frames = traceback.extract_tb(error.__traceback__)
    if any(os.path.abspath(f.filename) == own_path for f in frames):
        return None
    parts = placement.name.split(".")
    ancestors = {
        os.path.join(placement.root, *parts[:depth], "__init__.py"): ".".join(parts[:depth])
        for depth in range(1, len(parts))
    }
    for index, frame in enumerate(frames):
        package = ancestors.get(os.path.abspath(frame.filename))
        if package is not None:
            return package, frames[index:]
    return None


def _chain(frames: list, root: str) -> str:
    shown = [f for f in frames if not f.filename.startswith("<") and "importlib" not in f.filename]
    return " → ".join(f"{os.path.relpath(f.filename, root)}:{f.lineno}" for f in shown)


def _stand_in(package: str, root: str) -> None:
    folder = os.path.join(root, *package.split("."))
    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
    spec.submodule_search_locations = [folder]
    module = types.ModuleType(package, f"fxlens stands in for {package}/__init__.py, which failed to import")
    module.__spec__, module.__path__, module.__package__ = spec, [folder], package
    sys.modules[package] = module
    parent, _, leaf = package.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], leaf, module)


def import_past_failing_inits(
    finder: imports.BufferFinder, relative: bool, by_path: Callable[[], imports.BufferFinder]
) -> tuple[types.ModuleType, list[StandIn]]:
    """Import the edited module; an ancestor `__init__` that raises is stood in for (`relative`: the
    file imports relatively) or the file is loaded by path instead (`by_path()` gives that finder).
    Raises the import's error when it is not an ancestor's own."""
    stand_ins: list[StandIn] = []
    own_path = finder.own_loader.path
    for _ in range(MAX_STAND_INS):
        try:
            return imports.import_own(finder), stand_ins
        except Exception as error:
            failing = _failing_init(error, own_path, finder.own)
            if failing is None:
                raise
            package, frames = failing
            found = StandIn(package, _chain(frames, finder.own.root), message_text(error), "stand-in")
            if not relative:
                found.how = "by-path"
                finder = by_path()
                imports.install(finder)
                return imports.import_own(finder), [*stand_ins, found]
            stand_ins.append(found)
            _stand_in(package, finder.own.root)
    return imports.import_own(finder), stand_ins


def _first_import_line(tree: ast.Module) -> int:
    return next((s.lineno for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))), 1)


def stand_in_diagnostic(stand_in: StandIn, tree: ast.Module, lines: list[str]) -> Diagnostic:
    """Information at the file's first import: which `__init__` failed, why, and how the file loaded."""
    line = _first_import_line(tree)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    col = len(text) - len(text.lstrip())
    if stand_in.how == "by-path":
        done = (
            "fxlens loaded this file by its path, as `python FILE` would: it has no relative import, so it "
            "needs nothing of its package"
        )
        fix = "Nothing to do for fxlens; to import the package itself, install what its `__init__` imports."
    else:
        done = (
            f"fxlens stood in an empty package for `{stand_in.package}`, so this file's relative imports still "
            f"find their modules"
        )
        fix = (
            f"Install what `{stand_in.package}/__init__.py` imports, or make that import optional "
            "(inside a function, or `try: … except ImportError`)."
        )
    return Diagnostic(
        line,
        col,
        line,
        len(text.encode()),
        "information",
        "load",
        f"`{stand_in.package}/__init__.py` failed to import ({stand_in.chain}: {stand_in.error}); {done}",
        "Importing a module of a package runs the package's `__init__` first.",
        fix,
    )

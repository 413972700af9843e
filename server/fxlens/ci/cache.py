"""The check cache: a file's report, kept under a key of everything the report depends on.

The key is the file's path and text, the texts of the workspace modules it imports (to any depth:
its package's `__init__` files, siblings, their imports), the fxlens version (and its sources' digest),
the torch version and interpreter, and the options. An unchanged tree is then answered without starting a
worker. Reports that record an accident of the run (a timeout, a crash, the memory limit, fxlens's own
failure) are not kept: the next run tries again.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from fxlens import __version__
from fxlens.cache_dirs import user_cache_dir
from fxlens.engine.worker_client import TraceOptions
from fxlens.report import FileReport, file_from_json, to_json
from fxlens.worker.load.imports import placement, search_roots

NOT_KEPT = {"timeout", "crash", "memory", "internal", "exit", "interrupt"}
CACHE_ENV = "FXLENS_CACHE_DIR"


def default_cache_dir() -> str:
    """`$FXLENS_CACHE_DIR`, else the user cache folder (`$XDG_CACHE_HOME` or `~/.cache`) + `fxlens/check`."""
    return user_cache_dir("check", CACHE_ENV)


def torch_version(python: str) -> str:
    """The torch the worker will import, read from its metadata (importing torch costs seconds)."""
    probe = "import importlib.metadata as m, sys\ntry: print(m.version('torch'))\nexcept Exception: print('none')"
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import importlib.metadata

        try:
            return importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return "none"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _module_files(name: str, roots: list[str]) -> list[str]:
    """The files importing `name` runs from the roots: each package `__init__` on the way, then the module."""
    found: list[str] = []
    parts = name.split(".")
    for root in roots:
        for depth in range(1, len(parts) + 1):
            base = os.path.join(root, *parts[:depth])
            for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
                if os.path.isfile(candidate):
                    found.append(candidate)
    return found


def _imported_names(tree: ast.Module, package: str) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: max(0, len(package.split(".")) - node.level + 1)] if package else []
                module = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module:
                names.append(module)
                # `from pkg import sub` may import the submodule `pkg.sub`
                names.extend(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _project_of(path: str, workspace: str) -> str:
    """The folder a file's own imports resolve from: the workspace, or for a file outside it the
    folder above its top package."""
    path = os.path.abspath(path)
    if path.startswith(workspace + os.sep):
        return workspace
    try:
        return placement(path, ast.parse(Path(path).read_bytes()), []).root
    except (OSError, SyntaxError, ValueError):
        return os.path.dirname(path)


def workspace_imports(path: str, workspace: str) -> list[str]:
    """The workspace files `path` imports, to any depth (never installed libraries: the torch version
    and the interpreter stand for them). A file outside `workspace` brings its own project folder."""
    workspace = _project_of(path, os.path.abspath(workspace))
    seen: dict[str, None] = {}
    todo = [os.path.abspath(path)]
    while todo:
        current = todo.pop()
        try:
            text = Path(current).read_bytes()
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError):
            continue
        place = placement(current, tree, [workspace])
        package = place.name if place.package else place.name.rpartition(".")[0]
        roots = [place.root, os.path.dirname(current), *search_roots([workspace])]
        for name in _imported_names(tree, package):
            for found in _module_files(name, list(dict.fromkeys(roots))):
                found = os.path.abspath(found)
                if found not in seen and found != os.path.abspath(path) and found.startswith(workspace + os.sep):
                    seen[found] = None
                    todo.append(found)
    return sorted(seen)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fxlens_code() -> str:
    """The version and a digest of fxlens's own sources: a checkout between releases changes its code
    without changing its version, and a report made by other code must not be served."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def cache_key(path: str, text: str, workspace: str, options: TraceOptions, python: str, torch: str, code: str) -> str:
    imports = {os.path.relpath(p, workspace): _digest(Path(p).read_bytes()) for p in workspace_imports(path, workspace)}
    material = {
        "path": os.path.abspath(path),
        "text": _digest(text.encode()),
        "imports": imports,
        "fxlens": code,
        "torch": torch,
        "python": os.path.realpath(python),
        "options": [
            list(options.levels),
            options.execution,
            options.timeout,
            options.memory_mb,
            options.guess_memory_mb,
            options.surface,
            options.fixes,
        ],
    }
    return _digest(json.dumps(material, sort_keys=True).encode())


class CheckCache:
    """One JSON file per key under `folder` (written atomically: parallel runs may share the folder)."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder

    def _file(self, key: str) -> str:
        assert self.folder
        return os.path.join(self.folder, key[:2], key + ".json")

    def get(self, key: str) -> FileReport | None:
        if not self.folder:
            return None
        try:
            with open(self._file(key), encoding="utf-8") as handle:
                return file_from_json(json.load(handle))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # absent, or written by another fxlens version: trace again

    def put(self, key: str, report: FileReport) -> bool:
        if not self.folder or any(d.category in NOT_KEPT for d in report.all_diagnostics()):
            return False
        target = self._file(key)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(to_json(report), out)
        os.replace(temporary, target)
        return True

"""Which files of a tree to check: the Python files that define an `nn.Module` subclass, found by
reading them (ast), never by running them; `.gitignore` and `--exclude` respected."""

from __future__ import annotations

import ast
import fnmatch
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# bases that make a class a Module wherever they come from: torch's own, Lightning's, HuggingFace's
_MODULE_BASE_SUFFIXES = ("Module", "PreTrainedModel")
_TORCH_NN_PREFIXES = ("nn.", "torch.nn.")
# folders no one means to check: caches, virtual environments, version control
_SKIPPED_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "node_modules",
    ".fxlens_cache",
    "site-packages",
    "build",
    "dist",
}


@dataclass(frozen=True)
class ClassShape:
    name: str
    bases: tuple[str, ...]  # dotted texts of the base expressions (`nn.Module`, `Block`)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # `Generic[T]`, `nn.Module` never is, but a base may be
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _shapes(tree: ast.Module) -> tuple[list[ClassShape], set[str]]:
    """The classes of a file and the names it imports from `torch.nn` (`from torch.nn import Module`)."""
    classes = [
        ClassShape(node.name, tuple(filter(None, (_dotted(b) for b in node.bases))))
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    from_nn = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.nn")
        for alias in node.names
    }
    return classes, from_nn


def _is_module_base(base: str, from_nn: set[str], known: set[str]) -> bool:
    last = base.rsplit(".", 1)[-1]
    return (
        base.startswith(_TORCH_NN_PREFIXES) or base in from_nn or last in known or last.endswith(_MODULE_BASE_SUFFIXES)
    )


def module_files(paths: list[str]) -> list[str]:
    """Of these Python files, those defining a Module subclass. A class deriving from another file's
    Module class (`class Big(Block)` with `from .blocks import Block`) counts: names known as Modules
    anywhere in the set are known everywhere, to a fixed point."""
    parsed: dict[str, tuple[list[ClassShape], set[str]]] = {}
    unparsed: list[str] = []  # checked all the same: its syntax error is the report
    for path in paths:
        try:
            parsed[path] = _shapes(ast.parse(Path(path).read_bytes()))
        except (SyntaxError, ValueError, OSError):
            unparsed.append(path)
    known: set[str] = set()
    while True:
        grown = {
            c.name
            for classes, from_nn in parsed.values()
            for c in classes
            if any(_is_module_base(b, from_nn, known) for b in c.bases)
        }
        if grown <= known:
            break
        known |= grown
    return [path for path in paths if path in unparsed or any(c.name in known for c in parsed.get(path, ([],))[0])]


def _git_visible(folder: Path) -> set[Path] | None:
    """The files git would not ignore under `folder` (tracked or untracked), or None outside a repository."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            cwd=folder,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return {(folder / name).resolve() for name in done.stdout.decode("utf-8", "replace").split("\0") if name}


def _gitignore_patterns(folder: Path) -> list[tuple[Path, str]]:
    patterns = []
    for directory, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
        if ".gitignore" in files:
            for line in (Path(directory) / ".gitignore").read_text(errors="replace").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append((Path(directory), line))
    return patterns


def _ignored(path: Path, patterns: list[tuple[Path, str]]) -> bool:
    """The common `.gitignore` forms outside a repository: `name`, `*.py`, `dir/`, `/rooted`, `a/**/b`, `!keep`."""
    ignored = False
    for base, pattern in patterns:
        try:
            relative = path.relative_to(base).as_posix()
        except ValueError:
            continue
        negate = pattern.startswith("!")
        pattern = pattern[1:] if negate else pattern
        pattern = pattern.rstrip("/")  # a folder pattern matches the files under it (tested per part below)
        rooted = pattern.startswith("/") or "/" in pattern
        pattern = pattern.lstrip("/")
        parts = relative.split("/")
        if rooted:
            candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
            hit = any(
                fnmatch.fnmatchcase(c, pattern) or fnmatch.fnmatchcase(c, pattern.replace("**/", ""))
                for c in candidates
            )
        else:
            hit = any(fnmatch.fnmatchcase(part, pattern) for part in parts)
        if hit:
            ignored = not negate
    return ignored


def _excluded(path: Path, excludes: list[str], root: Path) -> bool:
    try:
        relative = path.resolve().relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    return any(
        fnmatch.fnmatchcase(relative, pattern)
        or fnmatch.fnmatchcase(relative, pattern.rstrip("/") + "/*")
        or any(fnmatch.fnmatchcase(part, pattern) for part in relative.split("/"))
        for pattern in excludes
    )


def _python_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for directory, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.endswith(".egg-info"))
        # (a dangling link is no file to check: a moved checkout leaves them)
        found.extend(
            Path(directory) / name
            for name in sorted(files)
            if name.endswith(".py") and os.path.isfile(os.path.join(directory, name))
        )
    return found


def files_to_check(paths: list[str], excludes: list[str], root: str | None = None) -> list[str]:
    """Named files as given (always checked, unless excluded); folders expanded to their Module files."""
    base = Path(root or os.getcwd()).resolve()
    chosen: list[str] = []
    for given in paths:
        target = Path(given)
        if not target.is_dir():
            if not _excluded(target, excludes, base):
                chosen.append(given)
            continue
        candidates = _python_files(target)
        visible = _git_visible(target)
        if visible is not None:
            candidates = [c for c in candidates if c.resolve() in visible]
        else:
            patterns = _gitignore_patterns(target)
            candidates = [c for c in candidates if not _ignored(c.resolve(), [(b.resolve(), p) for b, p in patterns])]
        candidates = [c for c in candidates if not _excluded(c, excludes, base)]
        chosen.extend(module_files([str(c) for c in candidates]))
    return list(dict.fromkeys(chosen))

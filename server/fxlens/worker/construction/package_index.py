"""A package's calls, read (never run): every call in the Python files of a class's package, filed by the
name it calls, so the calls that build a class are found without running anything. A package is read once
per analysis, whatever the number of classes that look, within bounds on its files' number and size.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass

from fxlens.worker.load import imports

# the files read for one class at most, and their size: a package, not a whole site-packages
MAX_FILES = 400
MAX_FILE_BYTES = 1 << 20
SKIPPED_FOLDERS = {"node_modules", "site-packages", "dist-packages", "build", "dist", "__pycache__", "venv", ".venv"}


@dataclass
class Site:
    """One call to the class, in a file of its package."""

    path: str
    line: int
    call: ast.Call
    function: ast.FunctionDef | None  # the function the call sits in (None: the module's top level)
    # the module-level class or function the call sits in (None: the module's top level)
    container: ast.ClassDef | ast.FunctionDef | None = None

    def where(self, root: str) -> str:
        return f"{os.path.relpath(self.path, root)}:{self.line}"


def package_folder(path: str) -> str:
    """The top package's folder holding `path` (its own folder outside any package)."""
    folder = os.path.dirname(os.path.abspath(path))
    top = folder
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top, folder = folder, os.path.dirname(folder)
    return top


def _size(path: str) -> int:
    """The file's size; past any limit for a file that cannot be read (a dangling link, no permission)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return MAX_FILE_BYTES + 1


def repository_files(
    folder: str,
    suffixes: tuple[str, ...],
    most_files: int = MAX_FILES,
    most_bytes: int = MAX_FILE_BYTES,
    leave_out: str = "",
) -> Iterator[str]:
    """The files under `folder` whose names end in one of `suffixes`, in a stable order, outside the folders
    that hold no code of the repository's own (SKIPPED_FOLDERS, hidden ones): the first `most_files` of at
    most `most_bytes` each, `leave_out` (a path) not among them."""
    count = 0
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if f not in SKIPPED_FOLDERS and not f.startswith("."))
        for name in sorted(files):
            path = os.path.join(current, name)
            if name.endswith(suffixes) and path != leave_out and _size(path) <= most_bytes:
                count += 1
                if count > most_files:
                    return
                yield path


Container = ast.ClassDef | ast.FunctionDef | None


def calls_in(tree: ast.Module) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, Container]]:
    def visit(
        node: ast.AST, function: ast.FunctionDef | None, container: Container
    ) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, Container]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, (ast.Name, ast.Attribute)):
                yield child, function, container
            top = child if container is None and isinstance(child, (ast.ClassDef, ast.FunctionDef)) else container
            yield from visit(child, child if isinstance(child, ast.FunctionDef) else function, top)

    yield from visit(tree, None, None)


class Index:
    """The calls of each package's files, by the name called: read once per analysis, whatever the
    number of classes that look (a package of hundreds of files is parsed once)."""

    def __init__(self) -> None:
        self._by_folder: dict[str, dict[str, list[Site]]] = {}

    def sites(self, name: str, own_path: str) -> list[Site]:
        """Every call to `name(...)` or `x.name(...)` in the other Python files of the class's package,
        top-level calls first (they need no function to run), then by file and line."""
        folder = package_folder(own_path)
        if folder not in self._by_folder:
            self._by_folder[folder] = _read(folder, os.path.abspath(own_path))
        return self._by_folder[folder].get(name, [])


def _called_name(call: ast.Call) -> str:
    if isinstance(call.func, ast.Name):
        return call.func.id
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def called_names(call: ast.Call) -> list[str]:
    """The names a call is filed under: what it calls, and for `Name.method(...)` the receiver too (a
    classmethod constructor: `Transformer.from_name("7B")`)."""
    func = call.func
    receiver = (
        [func.value.id]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id[:1].isupper()
        else []
    )  # a class, by its name (not `self.proj(...)`, `torch.cat(...)`)
    return [_called_name(call), *receiver]


def _read(folder: str, own: str) -> dict[str, list[Site]]:
    by_name: dict[str, list[Site]] = {}
    for path in repository_files(folder, (".py",), leave_out=own):
        text = imports.served_text(path)
        try:
            if text is None:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            tree = ast.parse(text, filename=path)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue  # a file that does not parse builds nothing
        for call, function, container in calls_in(tree):
            for name in called_names(call):
                by_name.setdefault(name, []).append(Site(path, call.lineno, call, function, container))
    for found in by_name.values():
        found.sort(key=lambda s: (s.function is not None, s.path, s.line))
    return by_name

"""Where a file sits in Python's module namespace, and an import hook that serves editor buffers.

A file under folders with `__init__.py` is its package-qualified module (`unet/unet_model.py` is
`unet.unet_model`), so its relative imports resolve; the folder above its top package, the request's
roots (workspace folders, the CLI's current directory) and their `src/` folders are importable. The
hook serves the edited buffer for its own module name and every other open buffer for the file the
ordinary path search finds: a package whose `__init__` imports the edited module imports it once,
from the buffer, and an unsaved edit of `parts.py` is what `model.py` imports.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import types
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from fxlens import lines as line_model

# what a request may carry (the server sends every open buffer; anything past these is dropped)
MAX_ROOTS = 64
MAX_BUFFERS = 256
MAX_BUFFER_CHARS = 16 << 20
MAX_PATH_CHARS = 4096


def valid_roots(value: object) -> list[str]:
    """Importable folders: absolute path strings only, a bounded number (others are dropped)."""
    if not isinstance(value, list):
        return []
    roots = [
        r for r in value if isinstance(r, str) and os.path.isabs(r) and 0 < len(r) <= MAX_PATH_CHARS and "\0" not in r
    ]
    return roots[:MAX_ROOTS]


def valid_buffers(value: object) -> dict[str, str]:
    """Other open buffers, absolute path -> text; a bounded number of bounded texts (others are dropped)."""
    if not isinstance(value, dict):
        return {}
    buffers: dict[str, str] = {}
    for path, text in value.items():
        if len(buffers) == MAX_BUFFERS:
            break
        if (
            isinstance(path, str)
            and isinstance(text, str)
            and os.path.isabs(path)
            and "\0" not in path
            and len(path) <= MAX_PATH_CHARS
            and len(text) <= MAX_BUFFER_CHARS
        ):
            buffers[path] = text
    return buffers


@dataclass(frozen=True)
class Placement:
    name: str  # the dotted module name the file is loaded as
    root: str  # the folder that must be importable for `name` to import
    package: bool = False  # the file is a package's `__init__.py`


def seed_linecache(path: str, text: str) -> None:
    # no mtime: linecache.checkcache keeps the entry instead of re-reading the file from disk
    # lines as reading the file gives them: inspect.getsource indexes them by the code's line numbers
    linecache.cache[path] = (len(text), None, line_model.with_ends(text), path)


def standalone_name(path: str) -> str:
    """A name for a file outside any package, never the name of a real module (`torch.py`, `math.py`)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() else "fxlens_user_module"
    if name in sys.modules or name in sys.builtin_module_names:
        name = f"fxlens_user_{name}"
    return name


def has_relative_imports(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


def search_roots(roots: list[str]) -> list[str]:
    """The request's roots and, where they have one, their `src/` folders (the `src` layout)."""
    found: list[str] = []
    for root in roots:
        for folder in (root, os.path.join(root, "src")):
            folder = os.path.abspath(folder)
            if os.path.isdir(folder) and folder not in found:
                found.append(folder)
    return found


def _inside(path: str, folder: str) -> list[str] | None:
    """The folder names leading from `folder` to `path`'s directory, or None when it is not inside."""
    relative = os.path.relpath(os.path.dirname(path), folder)
    if relative == os.curdir:
        return []
    if relative.startswith(os.pardir) or os.path.isabs(relative):
        return None
    return relative.split(os.sep)


def placement(path: str, tree: ast.Module, roots: list[str]) -> Placement:
    """How Python would name `path`: walk up while the folder is a package (has `__init__.py`).

    A file outside any package is a top-level module of its own folder, unless it imports
    relatively: it can only be part of a namespace package then, named from the deepest root that
    holds it."""
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    package = stem == "__init__"
    parts = [] if package else [stem]
    folder = os.path.dirname(path)
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.basename(folder).isidentifier():
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if all(p.isidentifier() for p in parts) and (len(parts) > 1 or (package and parts)):
        return Placement(".".join(parts), folder, package)
    if stem.isidentifier() and not package and has_relative_imports(tree):
        for root in sorted(search_roots(roots), key=len, reverse=True):
            folders = _inside(path, root)
            if folders and all(f.isidentifier() for f in folders):
                return Placement(".".join([*folders, stem]), root)
    return Placement(standalone_name(path), os.path.dirname(path))


def make_importable(folders: list[str]) -> None:
    """Put `folders` first on sys.path, in order; one already there keeps its place (site-packages)."""
    missing = [f for f in dict.fromkeys(folders) if f not in sys.path]
    sys.path[:0] = missing


class BufferLoader(importlib.abc.InspectLoader):
    """Runs a buffer's text (or the code the execution policy left of it) as the module's source."""

    def __init__(
        self,
        path: str,
        text: str,
        code: types.CodeType | None = None,
        context: Callable[[], AbstractContextManager] = nullcontext,
    ) -> None:
        self.path, self.text, self.code, self.context = path, text, code, context

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def get_source(self, fullname: str) -> str:
        return self.text

    def exec_module(self, module: types.ModuleType) -> None:
        seed_linecache(self.path, self.text)
        code = self.code or compile(self.text, self.path, "exec", dont_inherit=True)
        with self.context():
            exec(code, module.__dict__)


class BufferFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: the edited buffer for its own name, other buffers for their files."""

    def __init__(self, own: Placement, own_loader: BufferLoader, buffers: dict[str, str]) -> None:
        self.own, self.own_loader = own, own_loader
        self.buffers = {os.path.abspath(p): t for p, t in buffers.items() if os.path.abspath(p) != own_loader.path}
        # a lookup that cannot end at a buffer skips the path search (it runs again after us)
        self.leaves = {_leaf(p) for p in self.buffers}
        # file -> the text it was imported from (fingerprints count these by text, not mtime)
        self.served: dict[str, str] = {own_loader.path: own_loader.text}

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.own.name:
            locations = [os.path.dirname(self.own_loader.path)] if self.own.package else None
            return importlib.util.spec_from_file_location(
                fullname, self.own_loader.path, loader=self.own_loader, submodule_search_locations=locations
            )
        if fullname.rpartition(".")[2] not in self.leaves:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = os.path.abspath(spec.origin) if spec is not None and spec.has_location and spec.origin else None
        if spec is None or origin not in self.buffers:
            return None
        text = self.buffers[origin]
        self.served[origin] = text
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=BufferLoader(origin, text),
            submodule_search_locations=spec.submodule_search_locations,
        )


def _leaf(path: str) -> str:
    """The last part of the module name a file can be imported as (a package: its folder's name)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem


def install(finder: BufferFinder) -> None:
    """`finder` first on sys.meta_path, replacing the hook of any earlier load in this process."""
    uninstall()
    sys.meta_path.insert(0, finder)


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, BufferFinder)]


def import_own(finder: BufferFinder) -> types.ModuleType:
    """Import the edited module by its name, parents first, as `import` would: when a parent imports
    it, that import ran it (from the buffer) and this one returns the same module."""
    name = finder.own.name
    earlier = sys.modules.get(name)
    if earlier is not None and getattr(earlier, "__loader__", None) is not finder.own_loader:
        del sys.modules[name]  # imported before this request (e.g. a torch file opened in place)
    return importlib.import_module(name)


def served() -> dict[str, str]:
    """File -> the buffer text the current load imported it from (the edited file included)."""
    for finder in sys.meta_path:
        if isinstance(finder, BufferFinder):
            return finder.served
    return {}


def served_text(path: str) -> str | None:
    """The text the current load imported `path` from, when it came from a buffer."""
    return served().get(os.path.abspath(path))


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:32]

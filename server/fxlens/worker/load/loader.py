"""Turn the editor buffer into a live Python module, running only what the execution policy allows."""

from __future__ import annotations

import ast
import os
import types
from dataclasses import dataclass, field
from typing import TypeGuard

from fxlens import lines as line_model
from fxlens.worker.load import imports
from fxlens.worker.load.package_init import StandIn, import_past_failing_inits
from fxlens.worker.load.python_builtins import PythonBuiltins
from fxlens.worker.load.skipped_names import bound_names

# Top-level statements that define things rather than do things.
_DEFINING = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
)


@dataclass
class Skipped:
    line: int
    what: str
    names: tuple[str, ...] = ()  # what it would have bound (skipped_names.py)


@dataclass
class Loaded:
    module: types.ModuleType
    tree: ast.Module
    skipped: list[Skipped] = field(default_factory=list)
    # package `__init__`s that failed on their own and how the file got past them (package_init.py)
    stand_ins: list[StandIn] = field(default_factory=list)


def is_main_guard(stmt: ast.stmt) -> TypeGuard[ast.If]:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left, *stmt.test.comparators]
    names = {p.id for p in parts if isinstance(p, ast.Name)}
    consts = {p.value for p in parts if isinstance(p, ast.Constant)}
    return "__name__" in names and "__main__" in consts


def _is_wrap_call(stmt: ast.stmt) -> bool:
    """`torch.fx.wrap("f")`, `fx.wrap(f)`, `wrap(f)`: tracing needs these to have run."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    func = stmt.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "wrap"


# calls a top-level `if` may test in `safe` mode: they only ask (a builtin predicate, or whether a
# backend is available: `torch.cuda.is_available()`); any other call in the test is a bare call
_QUERIES = frozenset(("hasattr", "isinstance", "issubclass", "callable", "getattr", "len", "is_available"))


def _runs_a_call(test: ast.expr) -> bool:
    """Whether evaluating an `if` test calls anything but a query (`if setup():`, `if not main():`)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _QUERIES:
                return True
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _describe(stmt: ast.stmt) -> str:
    if is_main_guard(stmt):
        return 'the `if __name__ == "__main__":` block'
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return "a top-level loop"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return "a top-level `with` block"
    if isinstance(stmt, ast.Expr):
        return "a top-level call"
    if isinstance(stmt, ast.If):
        return "a top-level `if` whose test is a call (and its block)"
    return f"a top-level `{type(stmt).__name__}` statement"


def filter_safe(body: list[ast.stmt], skipped: list[Skipped]) -> list[ast.stmt]:
    """Keep the statements the `safe` policy runs; record the others in `skipped`."""
    kept: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, _DEFINING) or _is_wrap_call(stmt) or _is_docstring(stmt):
            kept.append(stmt)
        elif isinstance(stmt, ast.If) and not is_main_guard(stmt) and not _runs_a_call(stmt.test):
            stmt.body = filter_safe(stmt.body, skipped) or [ast.Pass()]
            stmt.orelse = filter_safe(stmt.orelse, skipped)
            kept.append(stmt)
        elif isinstance(stmt, ast.Try):
            # `try: import x / except ImportError: x = None` is a definition, too
            stmt.body = filter_safe(stmt.body, skipped) or [ast.Pass()]
            for handler in stmt.handlers:
                handler.body = filter_safe(handler.body, skipped) or [ast.Pass()]
            stmt.orelse = filter_safe(stmt.orelse, skipped)
            stmt.finalbody = filter_safe(stmt.finalbody, skipped)
            kept.append(stmt)
        else:
            skipped.append(Skipped(stmt.lineno, _describe(stmt), bound_names(stmt)))
    return kept


def module_name_for(path: str) -> str:
    """The module name of a file outside any package (see imports.placement for the rest)."""
    return imports.standalone_name(path)


def seed_linecache(path: str, text: str) -> None:
    imports.seed_linecache(path, text)


def parse(path: str, text: str) -> ast.Module:
    """Parse the buffer; raises SyntaxError with the buffer's line for anything that is not Python."""
    try:
        return ast.parse(text, filename=path)
    except (ValueError, UnicodeError) as error:
        # NUL bytes (ValueError on some Pythons) and undecodable bytes carried as lone surrogates
        # (UnicodeEncodeError) are "not Python" just like a syntax error: say where they are
        raise _not_python(path, text, error) from error


def _not_python(path: str, text: str, error: Exception) -> SyntaxError:
    for number, line in enumerate(line_model.split(text), 1):
        for col, char in enumerate(line):
            if char == "\0" or "\ud800" <= char <= "\udfff":
                what = "a NUL byte" if char == "\0" else "bytes that are not UTF-8"
                return SyntaxError(f"the file contains {what}: it is not Python source", (path, number, col + 1, line))
    return SyntaxError(f"the file is not Python source ({error})", (path, 1, 1, ""))


def load(
    path: str,
    text: str,
    execution: str,
    tree: ast.Module | None = None,
    roots: list[str] | None = None,
    buffers: dict[str, str] | None = None,
) -> Loaded:
    """Import the buffer as the module Python would name it (this runs in a disposable child).

    `execution` is "safe" (definitions only) or "full" (everything but `__main__`'s block, as an
    import would): it filters the buffer's own top level; the modules it imports run as Python
    imports them. `tree` is the text's `parse`, when the caller has it already. `roots` are
    importable folders (workspace folders; their `src/` too); `buffers` (path -> text) are other
    open buffers, imported instead of their files on disk. Raises whatever the user's code raises.
    """
    tree = tree or parse(path, text)
    skipped: list[Skipped] = []
    run_tree = ast.parse(text, filename=path)
    if execution != "full":  # anything unexpected means the safe policy, never more
        run_tree.body = filter_safe(run_tree.body, skipped)
    else:
        skipped = [Skipped(s.lineno, _describe(s), bound_names(s)) for s in run_tree.body if is_main_guard(s)]
        run_tree.body = [s for s in run_tree.body if not is_main_guard(s)]
    roots = roots or []
    where = imports.placement(path, tree, roots)
    imports.make_importable([where.root, *imports.search_roots(roots)])
    code = compile(run_tree, path, "exec", dont_inherit=True)
    import torch

    # a top-level `model = GPT(config)` must not allocate real weights (the modules it imports run as
    # they would anywhere)
    own = imports.BufferLoader(path, text, code, context=lambda: torch.device("meta"))
    finder = imports.BufferFinder(where, own, buffers or {})
    imports.install(finder)
    seed_linecache(path, text)

    def by_path() -> imports.BufferFinder:
        alone = imports.Placement(imports.standalone_name(path), os.path.dirname(path))
        imports.make_importable([alone.root])
        return imports.BufferFinder(alone, own, buffers or {})

    python_builtins = PythonBuiltins()
    try:
        module, stand_ins = import_past_failing_inits(finder, imports.has_relative_imports(tree), by_path)
    except SyntaxError as error:
        if error.filename in (path, None):
            raise
        # a module it imports does not parse (an unsaved buffer mid-edit): that is this file's import
        # failing at its import line, not a syntax error of this file
        raise ImportError(
            f"{error.filename}:{error.lineno}: {type(error).__name__}: {error.msg}", path=error.filename
        ) from error
    finally:
        python_builtins.put_back()  # before anything reads what the top level raised
    return Loaded(module, tree, skipped, stand_ins)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):  # `Generic[T]`-style bases
        return _dotted(node.value)
    return ""


def module_like_classes(tree: ast.Module) -> set[str]:
    """Names of the top-level classes that look like nn.Module subclasses, read without running code.

    A base counts when it lives in torch.nn (`nn.Module`, `torch.nn.Sequential`, a name imported
    from torch.nn), ends in `Module` (Lightning's and the like), or is such a class of this file."""
    from_nn: set[str] = set()
    nn_aliases = {"nn", "torch.nn"}
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith("torch.nn"):
            from_nn.update(alias.asname or alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.Import):
            nn_aliases.update(alias.asname for alias in stmt.names if alias.name == "torch.nn" and alias.asname)
    from_nn.discard("functional")
    from fxlens.worker.load.discover import top_level_classes

    classes = top_level_classes(tree.body)
    found: set[str] = set()
    changed = True
    while changed:  # a class deriving from a later-found Module class of the file
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            for base in map(_dotted, cls.bases):
                head, _, last = base.rpartition(".")
                if (
                    head in nn_aliases
                    or head.startswith("torch.nn")
                    or base in from_nn
                    or last.endswith("Module")
                    or base in found
                ):
                    found.add(cls.name)
                    changed = True
                    break
    return found

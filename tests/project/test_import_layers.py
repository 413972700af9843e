"""The layout's rules, read from the source (docs/architecture.md): no import circle in server/fxlens, no
module reaching into another's underscore names, the worker's stages importing one way only, the shared
top-level modules importing only the standard library and each other, and the CLI package on top."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"

# the worker's stages, top to bottom: a stage imports only stages below it (equal ranks: never each other)
WORKER_STAGES = {
    "process": 6,
    "analysis": 5,
    "fixes": 4,
    "passes": 3,
    "construction": 2,
    "levels": 1,
    "load": 1,
    "failures": 0,
}


@dataclass
class Module:
    name: str
    path: Path
    imports: set[str] = field(default_factory=set)
    # (module imported from, underscore name): `from m import _x`, or `m._x` on a module bound by import
    private: list[tuple[str, str]] = field(default_factory=list)


def _module_names() -> dict[str, Path]:
    names = {}
    for path in (SERVER / "fxlens").rglob("*.py"):
        parts = list(path.relative_to(SERVER).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def read_graph() -> dict[str, Module]:
    names = _module_names()
    modules = {name: Module(name, path) for name, path in names.items()}
    for module in modules.values():
        tree = ast.parse(module.path.read_text())
        package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        bound: dict[str, str] = {}  # local name -> the fxlens module it is
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                if not base.startswith("fxlens"):
                    continue
                for alias in node.names:
                    whole = f"{base}.{alias.name}"
                    if whole in modules:
                        module.imports.add(whole)
                        bound[alias.asname or alias.name] = whole
                    elif base in modules:
                        module.imports.add(base)
                        if _is_private(alias.name) and base != module.name:
                            module.private.append((base, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        module.imports.add(alias.name)
                        if alias.asname:
                            bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _is_private(node.attr)
                and bound[node.value.id] != module.name
            ):
                module.private.append((bound[node.value.id], node.attr))
        module.imports.discard(module.name)
    return modules


def circles(modules: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(modules[name].imports):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(modules):
        if name not in index:
            visit(name)
    return found


def _stage(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "worker" else None


def test_the_graph_is_read_from_every_module():
    modules = read_graph()
    assert {"fxlens.cli", "fxlens.cli.graph", "fxlens.worker.levels.table", "fxlens.worker.process.child"} <= set(
        modules
    )
    # a known edge, so that an empty graph cannot pass the tests below
    assert "fxlens.worker.levels.aten" in modules["fxlens.worker.levels.table"].imports


def test_no_import_circle_in_server_fxlens():
    found = circles(read_graph())
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_module_imports_another_modules_underscore_names():
    reaches = [f"{m.name} uses {source}.{name}" for m in read_graph().values() for source, name in m.private]
    assert not reaches, "private names used across modules: " + "; ".join(sorted(set(reaches)))


def test_worker_stages_import_downward_only():
    modules = read_graph()
    stages = {_stage(name) for name in modules} - {None}
    assert stages == set(WORKER_STAGES), "every worker sub-package has its place in WORKER_STAGES"
    upward = []
    for module in modules.values():
        mine = _stage(module.name)
        for other in module.imports:
            theirs = _stage(other)
            if mine and theirs and mine != theirs and WORKER_STAGES[theirs] >= WORKER_STAGES[mine]:
                upward.append(f"{module.name} -> {other}")
    assert not upward, "worker stages importing up or sideways: " + "; ".join(sorted(upward))


def _shared(module: Module) -> bool:
    """A module of fxlens's top level, which both sides import (a package's `__init__` and `__main__` are not)."""
    return module.path.parent == SERVER / "fxlens" and module.path.name not in ("__init__.py", "__main__.py")


def test_the_shared_top_level_modules_import_only_the_standard_library_and_each_other():
    modules = read_graph()
    shared = {name for name, module in modules.items() if _shared(module)}
    assert {"fxlens.report", "fxlens.lines", "fxlens.units"} <= shared and "fxlens.cli" not in shared
    reaching = [f"{name} -> {other}" for name in sorted(shared) for other in sorted(modules[name].imports - shared)]
    assert not reaching, "shared modules importing fxlens packages: " + "; ".join(reaching)
    outside = []
    for name in sorted(shared):
        for node in ast.walk(ast.parse(modules[name].path.read_text())):
            if isinstance(node, ast.Import):
                tops = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                tops = [(node.module or "").partition(".")[0]]
            else:
                continue
            # _typeshed is the standard library's typing stubs, imported only under TYPE_CHECKING
            outside += [
                f"{name} imports {top}"
                for top in tops
                if top not in ("fxlens", "_typeshed") and top not in sys.stdlib_module_names
            ]
    assert not outside, "shared modules importing outside the standard library: " + "; ".join(outside)


def test_only_the_entry_point_imports_the_cli():
    modules = read_graph()
    importers = {
        module.name
        for module in modules.values()
        if not module.name.startswith("fxlens.cli")
        for other in module.imports
        if other == "fxlens.cli" or other.startswith("fxlens.cli.")
    }
    assert importers == {"fxlens.__main__"}


def test_the_finder_sees_circles_and_private_names(tmp_path: Path):
    # the rules' own check: a made-up graph with a circle, read by the same function
    modules = {
        "a": Module("a", tmp_path, {"b"}),
        "b": Module("b", tmp_path, {"c"}),
        "c": Module("c", tmp_path, {"a"}),
        "d": Module("d", tmp_path, {"a"}),
    }
    assert circles(modules) == [["a", "b", "c"]]


def test_every_folder_of_the_package_is_a_package_that_git_keeps():
    # a folder without __init__.py is left out of the wheel; one named like an ignored path (`build/`)
    # is left out of the repository
    folders = {path.parent for path in (SERVER / "fxlens").rglob("*.py") if "__pycache__" not in path.parts}
    assert all((folder / "__init__.py").is_file() for folder in folders), sorted(
        str(f) for f in folders if not (f / "__init__.py").is_file()
    )
    if shutil.which("git") and (SERVER.parent / ".git").exists():
        inits = [str(folder / "__init__.py") for folder in sorted(folders)]
        ignored = subprocess.run(
            ["git", "check-ignore", "--no-index", *inits], cwd=SERVER.parent, capture_output=True, text=True
        ).stdout.split()
        assert not ignored, f"git ignores: {ignored}"

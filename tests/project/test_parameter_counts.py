"""No function in the folders below takes more than MAX_PARAMETERS parameters: a longer list becomes a
named dataclass (issue 40). `self` and `cls` are not counted; `*args` and `**kwargs` count one each."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "fxlens"
MAX_PARAMETERS = 7
# the folders held to the rule
CHECKED_FOLDERS = ("engine", "worker", "lsp")


Function = ast.FunctionDef | ast.AsyncFunctionDef


def parameter_count(function: Function, method: bool) -> int:
    """Declared parameters; a method's first (`self`, `cls`) is not counted, a function's `cls` is."""
    arguments = function.args
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
    if method and not static and named and named[0].arg in ("self", "cls"):
        named = named[1:]
    return len(named) + (arguments.vararg is not None) + (arguments.kwarg is not None)


def functions(tree: ast.AST) -> list[tuple[Function, bool]]:
    """Every function in `tree`, and whether it is a method (defined right in a class body)."""
    found = []
    for node in ast.walk(tree):
        body = node.body if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else []
        found += [
            (child, isinstance(node, ast.ClassDef))
            for child in body
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
    return found


def too_long(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for function, method in functions(ast.parse(path.read_text(), str(path))):
            count = parameter_count(function, method)
            if count > MAX_PARAMETERS:
                found.append(f"{path.relative_to(PACKAGE)}:{function.lineno} {function.name} ({count})")
    return found


def test_no_function_takes_more_than_seven_parameters():
    found = [entry for folder in CHECKED_FOLDERS for entry in too_long(PACKAGE / folder)]
    assert found == [], "\n".join(found)


def test_the_count_skips_a_methods_self_and_counts_star_arguments_once():
    found = functions(
        ast.parse(
            "class A:\n    def f(self, a, *args, b, **kwargs):\n        def h(self): pass\n"
            "def g(cls, y=1, /, z=2): pass"
        )
    )
    assert sorted((function.name, parameter_count(function, method)) for function, method in found) == [
        ("f", 4),
        ("g", 3),
        ("h", 1),
    ]

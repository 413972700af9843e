"""No function in lsp/ takes more than 7 parameters (self and cls aside): a longer list becomes a named dataclass."""
from __future__ import annotations

import ast
from pathlib import Path

FXLENS = Path(__file__).resolve().parents[2] / "server" / "fxlens"
FOLDERS = ("lsp",)
MOST = 7


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [f"*{a.arg}" for a in (args.vararg, args.kwarg) if a is not None]
    return [n for n in names if n not in ("self", "cls")]


def test_no_function_takes_more_than_seven_parameters():
    found = []
    for folder in FOLDERS:
        for path in sorted((FXLENS / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(_parameters(node)) > MOST:
                    found.append(f"{path.relative_to(FXLENS)}:{node.lineno} {node.name}({', '.join(_parameters(node))})")
    assert found == []

"""Which argument a failure comes from: the line of the class's own method (`__init__`, `forward`) that the
exception passed through, and the parameters whose values reach that line, through the method's local
assignments (`hidden = dim * mult` then `nn.Linear(hidden, ...)` blames `dim` and `mult`).

Read from the traceback and the class's syntax tree; nothing runs again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass
class Blame:
    line: int  # the method's line the exception passed through (1-based, the file's)
    parameters: list[str]  # the method's parameters whose values reach that line, in signature order


def _method(class_node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in class_node.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _line_in(error: BaseException, path: str, class_node: ast.ClassDef, method: str) -> int | None:
    """The innermost line of the class's `method` in `path` that the traceback passes through."""
    line = None
    traceback = error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        # (Python 3.10 names a code by co_name alone: the class's span tells its methods apart)
        qualname = getattr(code, "co_qualname", None)
        ours = (
            qualname == f"{class_node.name}.{method}"
            if qualname
            else code.co_name == method and class_node.lineno <= code.co_firstlineno <= (class_node.end_lineno or 0)
        )
        if code.co_filename == path and ours:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line


def _statement_at(body: list[ast.stmt], line: int) -> ast.stmt | None:
    """The innermost simple statement spanning `line` (inside a loop or an `if`: the statement, not the block)."""
    for statement in body:
        if not statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            continue
        inner = [getattr(statement, block, None) for block in ("body", "orelse", "finalbody", "handlers")]
        for block in inner:
            if isinstance(block, list):
                found = _statement_at([s for s in block if isinstance(s, ast.stmt)], line)
                if found is not None:
                    return found
        return statement
    return None


def _names(node: ast.AST) -> set[str]:
    """The names a node reads or writes, `self.width` as one name: an attribute keeps what was stored in it."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
            found.add(f"{sub.value.id}.{sub.attr}")
    return found


def _assigned(target: ast.expr) -> list[str]:
    """The names an assignment stores into: `x`, `self.width`, each of `a, b`; `x[0] = ...` stores into `x`
    (never `self` itself: `self.blocks = ...` changes what `self.blocks` holds, not what `self` does)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return [f"{target.value.id}.{target.attr}"]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _assigned(element)]
    if isinstance(target, (ast.Subscript, ast.Starred)):
        return _assigned(target.value)
    return []


def _reaching(method: ast.FunctionDef, line: int, parameters: list[str]) -> dict[str, set[str]]:
    """Each local assigned before `line`: the parameters its value comes from (the parameters map to themselves)."""
    sources = {p: {p} for p in parameters}
    assignments = sorted(
        (n for n in ast.walk(method) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))),
        key=lambda n: n.lineno,
    )
    for node in assignments:
        if node.lineno >= line:
            break
        value = node.iter if isinstance(node, ast.For) else node.value
        if value is None:
            continue
        reached = set().union(*(sources.get(name, set()) for name in _names(value)))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for name in _assigned(target):
                # `x = f(x)` keeps what `x` had; another assignment adds what its value brings
                sources[name] = sources.get(name, set()) | reached
    return sources


def blame(error: BaseException, path: str, class_node: ast.ClassDef, method: str = "__init__") -> Blame | None:
    """The parameters of `class_node`'s `method` the failure comes from; None when the traceback never
    passed through that method, or its line reads no parameter."""
    if isinstance(error, (NameError, ImportError)):
        return None  # a name the code lacks, whatever values it was given: no argument's fault
    node = _method(class_node, method)
    line = _line_in(error, path, class_node, method)
    if node is None or line is None:
        return None
    arguments = node.args
    parameters = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]][1:]
    statement = _statement_at(node.body, line)
    if statement is None:
        return None
    # a `for` or `with` header reads its own names; its body is never the statement found here
    read = _names(statement.iter if isinstance(statement, ast.For) else statement)
    sources = _reaching(node, line, parameters)
    reached = set().union(*(sources.get(name, set()) for name in read))
    found = [p for p in parameters if p in reached]
    return Blame(line, found) if found else None


def passed(call: ast.expr, class_node: ast.ClassDef, method: str = "__init__") -> dict[str, str]:
    """What a call of the class (a directive's `Probe(enc, feature_dim=64)`) passes each parameter of
    `method`, as written: {"backbone": "enc", "feature_dim": "64"}."""
    node = _method(class_node, method)
    if not isinstance(call, ast.Call) or node is None:
        return {}
    arguments = node.args
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]][1:]
    found = {name: ast.unparse(value) for name, value in zip(positional, call.args)}
    found.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
    return found


def blamed_text(
    error: BaseException, path: str, class_node: ast.ClassDef, call: ast.expr
) -> tuple[int, list[str]] | None:
    """(the line of `__init__` that rejected them, ["`backbone=PointEncoder`"]): the arguments a call passed
    that the failing line reads, as written; None when it reads none the call passed."""
    found = blame(error, path, class_node)
    if found is None:
        return None
    given = passed(call, class_node)
    named = [f"`{name}={given[name]}`" for name in found.parameters if name in given]
    return (found.line, named) if named else None

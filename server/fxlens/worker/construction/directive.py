"""A `# fxlens:` directive above a class: the module it builds and the inputs it calls it with, checked to be the
class it sits above; a drafted directive whose constructor still holds `FILL_…` placeholders builds nothing yet."""

from __future__ import annotations

import ast
import inspect
import types

from torch import nn

from fxlens.report import Build
from fxlens.worker.construction.build import (
    CannotBuild,
    Example,
    directive_namespace,
    evaluate,
    on_device,
    source_path,
)
from fxlens.worker.construction.placeholders import placeholders
from fxlens.worker.load.discover import ClassSource


class Unfilled(Exception):
    """A drafted directive whose constructor still holds placeholders (`FILL_unit`): nothing to build yet."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


class DirectiveFailed(Exception):
    """The directive's own expression raised: `stage` is "construction" or "inputs"."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.stage, self.error = stage, error


def split_directive(
    text: str, path: str, line: int | None = None, col: int = 0
) -> tuple[ast.expr, list[ast.expr] | None, list[ast.keyword]]:
    """`Ctor(args)(inputs)` -> (constructor expression, input expressions); `Ctor(args)` -> inputs None.

    With `line` (and the column the expression starts at), its nodes carry the comment's position, so
    a traceback through the directive points at the directive's line."""
    expr = ast.parse(text, filename=path, mode="eval").body
    if line is not None:
        for node in ast.walk(expr):
            if isinstance(node, (ast.expr, ast.keyword, ast.arg)):  # the nodes of an expression with a position
                one_line = node.lineno == getattr(node, "end_lineno", node.lineno) == 1
                node.lineno = node.end_lineno = line
                if one_line:
                    node.col_offset += col
                    node.end_col_offset = (node.end_col_offset or 0) + col
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
        return expr.func, expr.args, expr.keywords
    return expr, None, []


def checked_call(instance: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call as written: keywords stay keywords (export's `kwargs=`), so a `**kwargs` forward gets
    them by name. Raises TypeError (as the call would) when forward does not accept them."""
    try:
        signature = inspect.signature(instance.forward)
    except (TypeError, ValueError):
        return tuple(args), dict(kwargs)
    signature.bind(*args, **kwargs)
    return tuple(args), dict(kwargs)


def from_directive(
    source: ClassSource, cls: type[nn.Module], module: types.ModuleType, device: str, column: int = 0
) -> Example:
    """Build and call as the directive says. Raises DirectiveFailed when its expression raises, and
    CannotBuild when it builds anything but the class it sits above."""
    path = source_path(module)
    ctor, input_exprs, keywords = split_directive(source.directive or "", path, source.directive_line, column)
    namespace = directive_namespace(module)
    if unfilled := placeholders(ctor):
        raise Unfilled(unfilled)
    try:
        instance = on_device(device, lambda: evaluate(ctor, namespace, path))
    except Exception as error:
        raise DirectiveFailed("construction", error) from error
    if type(instance) is not cls and type(instance).__name__ != source.name:
        built = type(instance).__name__
        what = built if isinstance(instance, nn.Module) else f"{built}, not an nn.Module"
        raise CannotBuild(
            f"the directive above `class {source.name}` builds a `{what}`: it must build the class it sits above"
        )
    example = Example(
        instance, Build("directive", "none", detail=source.directive or "", device=device, directive=ast.unparse(ctor))
    )
    example.unfilled = placeholders([*(input_exprs or []), *(k.value for k in keywords)])
    if input_exprs is not None and not example.unfilled:
        try:
            args = on_device(device, lambda: tuple(evaluate(e, namespace, path) for e in input_exprs))
            kwargs = on_device(device, lambda: {k.arg: evaluate(k.value, namespace, path) for k in keywords if k.arg})
            example.inputs, example.kwargs = checked_call(instance, args, kwargs)
        except Exception as error:
            raise DirectiveFailed("inputs", error) from error
        example.build.inputs_source = "directive"
    return example

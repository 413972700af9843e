"""Build a Module class on the meta device and find example inputs for its forward."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
from torch import nn

from fxlens.report import Build, InputSpec
from fxlens.worker.discover import ClassSource, calls_to
from fxlens.worker.values import dtype_name

BATCH, SEQUENCE, SPATIAL = 2, 8, 16
DIM_NAMES = {BATCH: "B", SEQUENCE: "T"}


class CannotBuild(Exception):
    """The class cannot be built from what the file offers (no exception from user code)."""


@dataclass
class Example:
    instance: nn.Module
    build: Build
    inputs: Optional[tuple] = None
    # per input: {dim index: name} of the sizes that are free (marked dynamic), or None
    dims: Optional[list] = None
    problems: list = field(default_factory=list)
    # the class whose instance this is, when traced as the child a parent built
    parent: Optional[str] = None
    # the fx GraphModule already traced while inferring inputs (the fx level reuses it)
    graph: Any = None
    # makes the same module on the CPU, with real weights, for code the meta device cannot run (devices.py)
    rebuild: Optional[Callable[[], nn.Module]] = None


def on_device(device: str, make: Callable[[], Any]) -> Any:
    with torch.device(device):
        return make()


def evaluate(node: ast.expr, namespace: dict, path: str) -> Any:
    code = compile(ast.Expression(body=node), path, "eval")
    return eval(code, namespace)


def _required_params(callable_: Any) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(callable_)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters.values()
            if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _config_candidates(param: inspect.Parameter, namespace: dict, module_name: str) -> list[type]:
    annotation = param.annotation
    if isinstance(annotation, str):
        annotation = namespace.get(annotation)
    if isinstance(annotation, type) and annotation is not inspect.Parameter.empty:
        return [annotation]
    name = param.name.lower()
    if not any(key in name for key in ("conf", "cfg", "args", "param", "opt", "setting")):
        return []
    local = [obj for obj in namespace.values()
             if isinstance(obj, type) and obj.__module__ == module_name and not issubclass(obj, nn.Module)]
    return sorted(local, key=lambda c: not dataclasses.is_dataclass(c))


def _no_arg_instance(cls: type) -> Optional[Any]:
    if _required_params(cls):
        return None
    try:
        return cls()
    except Exception:
        return None


def build_alone(source: ClassSource, cls: type, module: types.ModuleType, tree: ast.Module,
                device: str) -> tuple[nn.Module, Build]:
    """Construct `cls` with no arguments, a config object, or the arguments of a call found in the file.

    Raises CannotBuild when nothing fits, or whatever the constructor raises.
    """
    namespace = module.__dict__
    required = _required_params(cls)
    if not required:
        return on_device(device, cls), Build("no-arguments", device=device)
    kwargs: dict[str, Any] = {}
    for param in required:
        for candidate in _config_candidates(param, namespace, module.__name__):
            value = _no_arg_instance(candidate)
            if value is not None:
                kwargs[param.name] = value
                break
    if len(kwargs) == len(required):
        described = ", ".join(f"{k}={type(v).__name__}()" for k, v in kwargs.items())
        return on_device(device, lambda: cls(**kwargs)), Build("config", detail=f"{cls.__name__}({described})",
                                                               device=device)
    for call in calls_to(tree, cls.__name__):
        try:
            args = [evaluate(a, namespace, source_path(module)) for a in call.args]
            kw = {k.arg: evaluate(k.value, namespace, source_path(module)) for k in call.keywords if k.arg}
        except Exception:
            continue
        return (on_device(device, lambda: cls(*args, **kw)),
                Build("call-in-file", detail=f"{ast.unparse(call)} (line {call.lineno})", device=device))
    missing = ", ".join(p.name for p in required if p.name not in kwargs)
    raise CannotBuild(f"`{cls.__name__}.__init__` needs {missing}, and the file offers no value for it")


def source_path(module: types.ModuleType) -> str:
    return module.__file__ or "<buffer>"


def split_directive(text: str, path: str) -> tuple[ast.expr, Optional[list[ast.expr]], list[ast.keyword]]:
    """`Ctor(args)(inputs)` -> (constructor expression, input expressions); `Ctor(args)` -> inputs None."""
    expr = ast.parse(text, filename=path, mode="eval").body
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Call):
        return expr.func, expr.args, expr.keywords
    return expr, None, []


def bind_positional(instance: nn.Module, args: tuple, kwargs: dict) -> tuple:
    """Forward arguments as one positional tuple (what tracing and export accept everywhere)."""
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(instance.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def from_directive(source: ClassSource, module: types.ModuleType, device: str) -> Example:
    path = source_path(module)
    ctor, input_exprs, keywords = split_directive(source.directive or "", path)
    namespace = module.__dict__
    instance = on_device(device, lambda: evaluate(ctor, namespace, path))
    if not isinstance(instance, nn.Module):
        raise TypeError(f"the directive builds a {type(instance).__name__}, not an nn.Module")
    example = Example(instance, Build("directive", "none", detail=source.directive or "", device=device))
    if input_exprs is not None:
        args = on_device(device, lambda: tuple(evaluate(e, namespace, path) for e in input_exprs))
        kwargs = on_device(device, lambda: {k.arg: evaluate(k.value, namespace, path) for k in keywords if k.arg})
        example.inputs = bind_positional(instance, args, kwargs)
        example.build.inputs_source = "directive"
    return example


def input_specs(instance: nn.Module, inputs: tuple, dims: Optional[list]) -> list[InputSpec]:
    try:
        names = list(inspect.signature(instance.forward).parameters)
    except (TypeError, ValueError):
        names = []
    specs = []
    for index, value in enumerate(inputs):
        name = names[index] if index < len(names) else f"arg{index}"
        if isinstance(value, torch.Tensor):
            free = (dims[index] if dims else None) or {}
            shape = [free.get(d, size) for d, size in enumerate(value.shape)]
            specs.append(InputSpec(name, shape, dtype_name(value.dtype)))
        elif isinstance(value, tuple) and value and all(isinstance(v, torch.Tensor) for v in value):
            free = (dims[index] if dims else None) or [{}] * len(value)
            parts = [f"Tensor({', '.join(str(f.get(d, s)) for d, s in enumerate(v.shape))}) {dtype_name(v.dtype)}"
                     for v, f in zip(value, free)]
            specs.append(InputSpec(name, value=f"tuple[{', '.join(parts)}]"))
        else:
            specs.append(InputSpec(name, value=repr(value)[:80]))
    return specs

"""Build a Module class on the meta device and find example inputs for its forward."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import nn

from fxlens.report import Build, InputSpec
from fxlens.worker.construction import (
    attribute_bags,
    main_block,
    module_arguments,
    package_calls,
    package_index,
    parameter_uses,
)
from fxlens.worker.construction import guess_arguments as guessing
from fxlens.worker.levels.memory_bound import BoundedRebuild, OverBound, cannot_allocate
from fxlens.worker.levels.values import dtype_name
from fxlens.worker.load.discover import ClassSource, calls_to

BATCH, SEQUENCE, SPATIAL = 2, 8, 16


class CannotBuild(Exception):
    """The class cannot be built from what the file offers (no exception from user code)."""


@dataclass
class Example:
    instance: nn.Module
    build: Build
    # the positional inputs of forward; None: no inputs are known
    inputs: tuple | None = None
    # the keyword inputs (keyword-only parameters, `**kwargs`, or what a call passed by name)
    kwargs: dict = field(default_factory=dict)
    # per input, positional then keyword in order (see `flat`): {dim index: name} of the sizes that
    # are free (marked dynamic), or None
    dims: list | None = None
    problems: list = field(default_factory=list)
    # per input of `flat()`: where its guess comes from (inference's labels; [] for a directive's inputs)
    reasons: list = field(default_factory=list)
    # the class whose instance this is, when traced as the child a parent built
    parent: str | None = None
    # the fx GraphModule already traced while inferring inputs (the fx level reuses it)
    graph: Any = None
    # makes the same module on the CPU, with real weights, for code the meta device cannot run (levels/devices.py)
    rebuild: Callable[[], nn.Module] | None = None
    # a child adopted without inputs: why its parent's run recorded none ("" otherwise)
    unrecorded: str = ""
    # the placeholders (`FILL_x`) a drafted directive's inputs still hold: built, but no inputs yet
    unfilled: list = field(default_factory=list)

    def flat(self) -> tuple:
        """Every input, positional then keyword: what `dims` is aligned with."""
        return (*(self.inputs or ()), *self.kwargs.values())

    def unflat(self, values: tuple) -> tuple[tuple, dict]:
        """(args, kwargs) from values aligned with `flat` (e.g. the inputs scaled up)."""
        count = len(self.inputs or ())
        return tuple(values[:count]), dict(zip(self.kwargs, values[count:]))


def on_device(device: str, make: Callable[[], Any]) -> Any:
    """`make()` on `device`. A constructor that allocates past the memory bound (levels/memory_bound.py) ends
    the search for a build: every other guess would go through the same allocation."""
    try:
        with torch.device(device):
            return make()
    except Exception as error:
        if cannot_allocate(error):
            raise OverBound(None, error) from error
        raise


def directive_namespace(module: types.ModuleType) -> dict:
    """What a directive sees: the file's namespace plus `torch` (the file's own names win), so that
    `# fxlens: M()(torch.randn(2, 3))` works in a file that imports torch as `th`."""
    return {"torch": torch, **module.__dict__}


def evaluate(node: ast.expr, namespace: dict, path: str) -> Any:
    code = compile(ast.Expression(body=node), path, "eval")
    return eval(code, namespace)


def _required_params(callable_: Any) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(callable_)
    except (TypeError, ValueError):
        return []
    return [
        p
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _config_candidates(param: inspect.Parameter, cls: type, namespace: dict, module_name: str) -> list[type]:
    annotation = param.annotation
    if annotation is inspect.Parameter.empty and param.name == "config":
        # the class says what its config is (`config_class = LlamaConfig`, HuggingFace's convention)
        annotation = getattr(cls, "config_class", None) or annotation
    if isinstance(annotation, str):
        annotation = namespace.get(annotation)
    if isinstance(annotation, type) and annotation is not inspect.Parameter.empty:
        # a config class, not a value type: `int()` is 0 and `torch.Tensor()` empty, never a setting
        plain = annotation.__module__ == "builtins" or issubclass(annotation, (torch.Tensor, nn.Module))
        return [] if plain else [annotation]
    name = param.name.lower()
    if not any(key in name for key in ("conf", "cfg", "args", "param", "opt", "setting")):
        return []
    local = [
        obj
        for obj in namespace.values()
        if isinstance(obj, type) and obj.__module__ == module_name and not issubclass(obj, nn.Module)
    ]
    return sorted(local, key=lambda c: not dataclasses.is_dataclass(c))


def _no_arg_instance(cls: type) -> Any | None:
    if _required_params(cls):
        return None
    try:
        return cls()
    except Exception:  # noqa: BLE001  a constructor that fails without arguments just needs some
        return None


def _guessed_config(cls: type, namespace: dict) -> tuple[Any | None, str]:
    """A config class whose own fields are required (`ModelArgs(d_model, n_layer, vocab_size)`), built
    from guessed values: (the instance, how a directive spells it), or (None, "")."""
    if namespace.get(cls.__name__) is not cls:
        return None, ""  # a directive could not name it
    try:
        made = guessing.guess(cls, _required_params(cls), {}, guessing.Around(), lambda args, kw: cls(*args, **kw))
    except guessing.NoGuess:
        return None, ""
    return made.instance, made.expression


def _spelled(value: Any, namespace: dict) -> str | None:
    """How a directive names `value` in the file's namespace: `GPTConfig()` for a config instance."""
    name = type(value).__name__
    return f"{name}()" if namespace.get(name) is type(value) else None


def _file_modules(module: types.ModuleType) -> list[type]:
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == module.__name__
    ]


def _package_modules(module: types.ModuleType) -> list[type]:
    """The Module classes of the other modules of the file's own package imported so far (not of the
    whole top-level package: transformers' models are one package each)."""
    package = module.__name__.rpartition(".")[0]
    found: dict[int, type] = {}
    for name, loaded in list(sys.modules.items()):
        if package and loaded is not None and name.startswith(package + ".") and name != module.__name__:
            found.update(
                {
                    id(obj): obj
                    for obj in list(vars(loaded).values())
                    if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == name
                }
            )
    return list(found.values())


def build_alone(
    source: ClassSource,
    cls: type[nn.Module],
    module: types.ModuleType,
    tree: ast.Module,
    device: str,
    roots: Sequence[str] = (),
    index: package_index.Index | None = None,
) -> tuple[nn.Module, Build]:
    """Construct `cls` with no arguments, a config object of defaults, the arguments of a call found in
    the file, a factory of the file, its `__main__` block, a call found in another file of its package
    (package_calls.py), or else guessed values (a config object's, then the arguments').
    Build.directive is the constructor expression that reproduces it ("" for a build from another file of the package).

    Raises CannotBuild when nothing fits, or whatever the constructor raises.
    """
    namespace = module.__dict__
    name = cls.__name__
    required = _required_params(cls) + parameter_uses.forwarded(cls)
    if not required:
        return on_device(device, cls), Build("no-arguments", device=device, directive=f"{name}()")
    kwargs: dict[str, Any] = {}
    guessed_configs: dict[str, str] = {}  # parameter -> `ModelArgs(d_model=64, ...)`
    for param in required:
        for candidate in _config_candidates(param, cls, namespace, module.__name__):
            value = _no_arg_instance(candidate)
            if value is None:
                value, text = _guessed_config(candidate, namespace)
                if value is not None and text:
                    guessed_configs[param.name] = text
            if value is not None:
                kwargs[param.name] = value
                break
    spelled = {k: guessed_configs.get(k) or _spelled(v, namespace) for k, v in kwargs.items()}
    if len(kwargs) == len(required) and not guessed_configs:
        described = ", ".join(f"{k}={type(v).__name__}()" for k, v in kwargs.items())
        ctor = f"{name}({described})" if all(spelled.values()) else ""
        return on_device(device, lambda: cls(**kwargs)), Build(
            "config", detail=f"{name}({described})", device=device, directive=ctor
        )
    for call in calls_to(tree, name):
        try:
            args = [evaluate(a, namespace, source_path(module)) for a in call.args]
            kw: dict[str, Any] = {}
            for keyword in call.keywords:  # `**sizes` too: a function's local makes the call the function's
                value = evaluate(keyword.value, namespace, source_path(module))
                kw.update({keyword.arg: value} if keyword.arg else value)
        except Exception:  # noqa: BLE001  a call whose arguments cannot be evaluated here: the next one
            continue
        return (
            on_device(device, partial(cls, *args, **kw)),
            Build(
                "call-in-file",
                detail=f"{ast.unparse(call)} (line {call.lineno})",
                device=device,
                directive=ast.unparse(call),
            ),
        )
    made_here = lambda make: on_device(device, make)  # noqa: E731
    # `build_detector(args)`: a factory called with a bag of settings for `args`
    runner = package_calls.Runner(made_here, partial(attribute_bags.factory_bags, list(roots)))
    found = package_calls.build_by_own_factory(cls, module, tree, runner, namespace)
    if found is not None:
        return found.instance, Build("call-in-file", detail=found.detail, device=device, directive=found.directive)
    scripted = main_block.build_by_main_block(cls, tree, namespace, source_path(module), made_here)
    if scripted is not None:
        return scripted.instance, Build(
            "call-in-file", detail=scripted.detail, device=device, directive=scripted.directive
        )
    found = package_calls.build_from_package(
        index or package_index.Index(),
        cls,
        module.__name__,
        source_path(module),
        list(roots),
        runner,
        namespace,
    )
    if found is not None:
        return found.instance, Build("found", detail=found.detail, device=device, directive=found.directive)
    if len(kwargs) == len(required):  # a config of guessed values: only when no real call builds the class
        values = ", ".join(f"{k}={spelled[k]}" for k in kwargs)
        return on_device(device, lambda: cls(**kwargs)), Build(
            "guessed", detail=values, device=device, directive=f"{name}({values})"
        )
    fixed = {k: module_arguments.Option(v, spelling) for k, v in kwargs.items() if (spelling := spelled[k])}
    try:
        around = guessing.Around(_file_modules(module) + _package_modules(module), source.node, namespace)
        made_by = lambda args, kw: on_device(  # noqa: E731
            device,
            lambda: cls(*map(module_arguments.made, args), **{k: module_arguments.made(v) for k, v in kw.items()}),
        )
        made = guessing.guess(cls, required, fixed, around, made_by)
    except guessing.NoGuess as reason:
        # where guessing found nothing: a parameter that is a bag of settings (`configs.d_model`)
        bagged = attribute_bags.guess_with_bags(
            cls, required, fixed, around, made_by, (tree, source_path(module), list(roots))
        )
        if bagged is not None:
            return bagged[0].instance, Build("guessed", detail=bagged[1], device=device, directive=bagged[0].expression)
        missing = [f"`{p.name}`" for p in required if p.name not in kwargs]
        listed = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        them = "it" if len(missing) == 1 else "them"
        raise CannotBuild(
            f"`{name}.__init__` needs {listed}, and nothing in the file or its package passes "
            f"{them} (fxlens could not guess values: {reason})"
        ) from None
    values = ", ".join(f"{k}={v}" for k, v in made.arguments.items())
    return made.instance, Build("guessed", detail=values, device=device, directive=made.expression)


def source_path(module: types.ModuleType) -> str:
    return module.__file__ or "<buffer>"


def _positional_names(instance: nn.Module, count: int) -> list[str]:
    """The parameter each of `count` positional inputs lands in (`args[1]` past a `*args`)."""
    try:
        params = list(inspect.signature(instance.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for param in params:
        if param.kind == param.VAR_POSITIONAL:
            names += [f"{param.name}[{i}]" for i in range(count - len(names))]
        elif param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
    return names + [f"arg{i}" for i in range(len(names), count)]


def input_specs(
    instance: nn.Module, inputs: tuple, dims: list | None, kwargs: dict | None = None, reasons: list | None = None
) -> list[InputSpec]:
    """One spec per input, positional first, then the keywords (named as passed, `keyword` set), each
    with where its guess came from when `reasons` says."""
    kwargs = kwargs or {}
    specs = _specs(instance, inputs, dims, kwargs)
    for spec, reason in zip(specs, reasons or []):
        spec.source = reason or ""
    return specs


def _specs(instance: nn.Module, inputs: tuple, dims: list | None, kwargs: dict) -> list[InputSpec]:
    names = _positional_names(instance, len(inputs))[: len(inputs)] + list(kwargs)
    specs = []
    for index, (name, value) in enumerate(zip(names, (*inputs, *kwargs.values()))):
        keyword = index >= len(inputs)
        if isinstance(value, torch.Tensor):
            free = (dims[index] if dims and index < len(dims) else None) or {}
            shape = [free.get(d, size) for d, size in enumerate(value.shape)]
            specs.append(InputSpec(name, shape, dtype_name(value.dtype), keyword=keyword))
        elif isinstance(value, tuple) and value and all(isinstance(v, torch.Tensor) for v in value):
            free = (dims[index] if dims and index < len(dims) else None) or [{}] * len(value)
            parts = [
                InputSpec(str(i), [f.get(d, s) for d, s in enumerate(v.shape)], dtype_name(v.dtype))
                for i, (v, f) in enumerate(zip(value, free))
            ]
            text = ", ".join(f"Tensor({', '.join(map(str, part.shape or []))}) {part.dtype}" for part in parts)
            specs.append(InputSpec(name, value=f"tuple[{text}]", parts=parts, keyword=keyword))
        elif isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()):
            text = ", ".join(
                f"{k}: Tensor({', '.join(map(str, v.shape))}) {dtype_name(v.dtype)}" for k, v in value.items()
            )
            specs.append(InputSpec(name, value=f"dict[{text}]", keyword=keyword))
        else:
            specs.append(InputSpec(name, value=repr(value)[:80], keyword=keyword))
    return specs


def part_of(rebuild: Callable[[], nn.Module] | None, path: str) -> Callable[[], nn.Module] | None:
    """The submodule at `path` of the parent's CPU rebuild: a child's own real weights (under the parent's bound)."""
    if isinstance(rebuild, BoundedRebuild):
        return rebuild.part(path)
    return (lambda: rebuild().get_submodule(path)) if rebuild is not None else None

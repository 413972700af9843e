"""Guesses for a constructor parameter that takes a module (`attn_layers: Encoder`, `router: nn.Module`,
`experts: nn.ModuleList`): an instance of a class of the file or of its package that fits, made with
guessed arguments of its own (one level deep).

What fits:
- a parameter annotated with a Module class: that class, or a subclass of it in the file;
- `nn.Module`: a class of the package whose name has a word of the parameter's (`router` -> TopKRouter);
- `nn.ModuleList`: a list of such classes, by the singular (`experts` -> SwiGLUExpert), as many as the
  parameter's kind counts (`experts` -> 4, as a sibling `num_experts` is guessed).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import nn

from fxlens.worker.construction.package_calls import named

MAX_OPTIONS = 2


@dataclass
class Option:
    value: Any
    text: str  # how the directive spells it


@dataclass
class Part:
    """A module argument (`attn_layers: Encoder`), made when the instance is, on the device it is built on."""

    make: Callable[[], nn.Module]


def made(value: Any) -> Any:
    """The value an option passes: a Part is built now."""
    return value.make() if isinstance(value, Part) else value


def constructed(kind: type, args: tuple | list, kwargs: dict) -> Any:
    """`kind(*args, **kwargs)` with each Part among them built now (a block's own attention module)."""
    return kind(*map(made, args), **{k: made(v) for k, v in kwargs.items()})


def is_module_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, nn.Module) and annotation is not nn.Module


def class_words(name: str) -> set[str]:
    """`SwiGLUExpert` -> {swi, glu, expert}; `TopKRouter` -> {top, k, router}."""
    return {w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)}


def _names(param_name: str, plural: bool) -> set[str]:
    parts = {w for w in re.split(r"[_\W]+", param_name.lower()) if w}
    if plural:
        parts |= {w[:-2] for w in parts if w.endswith("es")} | {w[:-1] for w in parts if w.endswith("s")}
    return parts


def spelled(kind: type, names: dict) -> str:
    """How the file names `kind`: its own name, `torch.nn.X` for torch's, else an import expression
    (package_calls.named); a class defined in a function keeps its bare name."""
    if names.get(kind.__name__) is not kind and getattr(nn, kind.__name__, None) is kind:
        return f"torch.nn.{kind.__name__}"
    return named(kind, names) or kind.__name__


# (class, its required parameters) -> the guess that built it: Guessed's args, kwargs and expression
NestedGuess = Callable[[type, list], Any]


def module_options(
    param: inspect.Parameter, count: int, classes: list[type], names: dict, nested: bool, guess_nested: NestedGuess
) -> list[Option]:
    """Instances (as Parts, built with the instance) for a parameter that takes a module; [] otherwise
    (and when `nested`: too deep). `count`: how many items a ModuleList holds."""
    annotation = param.annotation
    if nested:
        return []
    if is_module_class(annotation) and annotation is not nn.ModuleList:
        kinds = [annotation, *(c for c in classes if issubclass(c, annotation) and c is not annotation)]
        return _options(kinds, names, guess_nested, count=None)
    if annotation is nn.Module or annotation is nn.ModuleList:
        listed = annotation is nn.ModuleList
        wanted = _names(param.name, plural=listed)
        kinds = [c for c in classes if class_words(c.__name__) & wanted and not issubclass(c, nn.ModuleList)]
        # a list nothing fills is still a list: empty, as before a class of the package could fill it
        empty = _options([nn.ModuleList], names, guess_nested, None) if listed else []
        return _options(kinds, names, guess_nested, count if listed else None) + empty
    return []


def named_instances(
    param: inspect.Parameter, classes: list[type], names: dict, guess_nested: NestedGuess
) -> list[Option]:
    """For an unannotated parameter nothing else hints at, an instance of a class of the file whose name
    shares a word with it (`attention` -> FullAttention(d_model=64, n_heads=4)), as a Part."""
    kinds = [c for c in classes if named_like(param.name, c)]
    return _options(kinds, names, guess_nested, None)


def named_like(param_name: str, kind: type) -> bool:
    """Whether a class's name shares a word with a parameter's (`attention` -> FullAttention)."""
    return bool(class_words(kind.__name__) & _names(param_name, plural=False)) and not issubclass(kind, nn.ModuleList)


def _repeated(make: Callable[[], nn.Module], count: int) -> nn.ModuleList:
    return nn.ModuleList(make() for _ in range(count))


def _options(kinds: list[type], names: dict, guess_nested: NestedGuess, count: int | None) -> list[Option]:
    options = []
    for kind in kinds:
        try:
            params = inspect.signature(kind).parameters.values()
        except (TypeError, ValueError):
            continue
        required = [
            p
            for p in params
            if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        try:
            with torch.device("meta"):
                found = guess_nested(kind, required)
        except Exception:  # noqa: BLE001 - NoGuess, or the class rejecting every guess: the next class
            continue
        one = partial(constructed, kind, found.args, found.kwargs)
        text = found.expression.replace(kind.__name__, spelled(kind, names), 1)
        if count is None:
            options.append(Option(Part(one), text))
        else:
            options.append(
                Option(Part(partial(_repeated, one, count)), f"torch.nn.ModuleList([{text} for _ in range({count})])")
            )
        if len(options) == MAX_OPTIONS:
            break
    return options


def torch_classes(parts: set[str], convolutional: bool) -> list[type]:
    """What torch.nn offers a parameter that takes a norm or an activation class (`norm_layer`, `act_layer`)
    and that no class of the file fits by name."""
    if parts & {"norm", "normalization", "normalisation", "bn"}:
        return [nn.BatchNorm2d, nn.LayerNorm] if convolutional else [nn.LayerNorm, nn.BatchNorm2d]
    if parts & {"act", "activation", "nonlinearity"}:
        return [nn.GELU, nn.ReLU]
    return []

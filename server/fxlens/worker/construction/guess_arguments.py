"""Constructor arguments nothing in the file supplies, guessed: small plausible values read from each
parameter's name (its word parts), annotation, the defaults of its siblings and how `__init__` uses it.

A few combinations are tried, always on the device asked for (meta: no weights); the first that
builds wins and is reported as `guessed`, with the constructor expression that reproduces it.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from torch import nn

from fxlens.worker.construction import constraints
from fxlens.worker.construction.module_arguments import (
    Option,
    constructed,
    is_module_class,
    module_options,
    named_instances,
    named_like,
    torch_classes,
)
from fxlens.worker.construction.name_kinds import COUNTED, DIM, INT_VALUES, ints, kind_of, words
from fxlens.worker.construction.parameter_uses import Use, forwarded, init_of, uses_in

MAX_BUILDS = 12
# module arguments guessed this deep: `Encoder(blocks)` -> [EncoderBlock(attention=FullAttention(...), ...)]
MODULE_DEPTH = 2
# the last word of a parameter that takes a class (`block`, `norm_layer`, `cell_type`), unless counted
_BLOCK_WORDS = {"block", "layer", "cell", "module", "cls", "type", "builder", "fn", "factory"}
# the names that lookups by name (`get_activation(act_fn)`, `Norm[norm_name, 2]`) of every library know
_NAMED = {"activation": ("silu", "gelu", "relu"), "norm": ("batch", "instance", "layer", "group")}
_COUNT_WORDS = {"n", "num", "number", "count"}


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


# `Tuple[int, int]`: a tuple of exactly that many items (not `Tuple[int, ...]`)
_FIXED_TUPLE = re.compile(r"^(?:typing\.)?[Tt]uple\[([^\[\]]*)\]$")


def _list_options(kind: str | None, use: Use, name: str, annotation: str = "") -> list[Option]:
    fixed = _FIXED_TUPLE.match(annotation.replace(" ", ""))
    items = fixed.group(1).split(",") if fixed and "..." not in fixed.group(1) else []
    # a list of channel counts is one per stage (`channels=(16, 16)`): widths, not an image's 3
    item = {"depth": 1, "channels": 16}.get(kind or "", (ints(kind, name) or [DIM])[0])
    if items:  # `grid_size: Tuple[int, int]`: (64, 64)
        return [Option((item,) * len(items), repr((item,) * len(items)))]
    lengths = [use.indexed + 1] if use.indexed >= 0 else [4, 2, 3]
    return [Option([item] * n, repr([item] * n)) for n in lengths]


def _literal_options(values: list[Any]) -> list[Option]:
    return [Option(v, repr(v)) for v in values]


def options_for(
    param: inspect.Parameter,
    use: Use,
    siblings: dict[str, Any],
    classes: list[type],
    nested: int = 0,
    names: dict | None = None,
    convolutional: bool = False,
) -> list[Option]:
    """Plausible values for one required parameter, best first; [] when nothing hints at one.
    `nested`: how many module arguments deep the guess is (an instance is guessed down to MODULE_DEPTH).
    `convolutional`: the class convolves (a norm class it takes is a BatchNorm2d before a LayerNorm)."""

    def nested_guess(cls: type, required: list[inspect.Parameter]) -> Guessed:
        around = Around(classes, names=names)
        return guess(cls, required, {}, around, partial(constructed, cls), nested=nested + 1)

    kind = kind_of(param.name)
    # a list of modules holds as many as a sibling count of that kind is guessed at (`experts` -> 4)
    count = INT_VALUES[kind][0] if kind in COUNTED else 2
    listed = param.replace(annotation=nn.ModuleList) if use.modules and param.annotation is param.empty else param
    modules = module_options(listed, count, classes, names or {}, nested >= MODULE_DEPTH, nested_guess)
    if modules:
        return modules
    annotation = _annotation_text(param.annotation)
    parts = set(words(param.name))
    if use.literals or re.search(r"\bstr\b|Literal", annotation):
        literals = use.literals or re.findall(r"['\"]([^'\"]+)['\"]", annotation)
        return _literal_options(literals or list(_NAMED.get(kind or "", ())))
    if re.search(r"\bbool\b", annotation) or (use.truth and not use.numeric and kind is None):
        return _literal_options([False, True])
    block_like = bool(words(param.name)) and words(param.name)[-1] in _BLOCK_WORDS and not parts & _COUNT_WORDS
    if (
        re.search(r"\b(Type|type|Callable)\b", annotation)
        or use.called
        or use.attributes
        or (block_like and not use.numeric)
    ):
        ranked = [c for c in classes if all(hasattr(c, a) for a in use.attributes)]
        ranked.sort(key=lambda c: not (parts & set(words(c.__name__))))
        fitting = [c for c in ranked if parts & set(words(c.__name__))]
        offered = [c for c in torch_classes(parts, convolutional) if all(hasattr(c, a) for a in use.attributes)]
        options = [Option(c, c.__name__) for c in fitting]
        options += [Option(c, f"torch.nn.{c.__name__}") for c in offered]
        options += [Option(c, c.__name__) for c in ranked if c not in fitting]
        return options[:3]
    if re.search(r"\b(List|list|Sequence|Tuple|tuple|Iterable)\b", annotation) or use.iterated or use.indexed >= 0:
        return _list_options(kind, use, param.name, annotation)
    if re.search(r"\bfloat\b", annotation) or kind in ("rate", "eps"):
        value = {"rate": 0.0, "eps": 1e-5}.get(kind or "", float((ints(kind, param.name) or [1])[0]))
        return _literal_options([value])
    sibling = next(
        (
            v
            for n, v in siblings.items()
            if isinstance(v, int) and not isinstance(v, bool) and kind_of(n) == kind and kind is not None
        ),
        None,
    )
    values = ints(kind, param.name)
    if sibling is not None and sibling not in values:
        values.insert(0, sibling)  # `in_dim` beside `out_dim=128`: the file's own scale
    if not values and (re.search(r"\bint\b", annotation) or use.numeric):
        values = [8, DIM]
    if not values and not annotation and nested < MODULE_DEPTH:  # `attention` beside a FullAttention of the file
        return named_instances(param, classes, names or {}, nested_guess)
    return _literal_options(values)


def _fit_heads(combo: dict[str, Option], kinds: dict[str, str | None], siblings: dict[str, Any]) -> None:
    """Make every width divisible by the number of heads (an attention layer asserts it)."""
    heads = [o.value for n, o in combo.items() if kinds[n] == "heads" and isinstance(o.value, int)]
    heads += [
        v for n, v in siblings.items() if kind_of(n) == "heads" and isinstance(v, int) and not isinstance(v, bool)
    ]
    if not heads:
        return
    step = math.lcm(*[h for h in heads if h > 0] or [1])
    for name, option in combo.items():
        if kinds[name] == "dim" and isinstance(option.value, int) and option.value % step:
            value = math.lcm(option.value, step)
            combo[name] = Option(value, repr(value))


def _fit_groups(combo: dict[str, Option], kinds: dict[str, str | None], siblings: dict[str, Any]) -> None:
    """Make every channel count a multiple of the group count (GroupNorm asserts it): `in_channels` beside
    `resnet_groups=32` becomes 32, not 3."""
    groups = [o.value for n, o in combo.items() if kinds[n] == "groups" and isinstance(o.value, int)]
    groups += [
        v for n, v in siblings.items() if kind_of(n) == "groups" and isinstance(v, int) and not isinstance(v, bool)
    ]
    step = max((g for g in groups if g > 1), default=1)
    for name, option in combo.items():
        if (
            kinds[name] in ("channels", "dim")
            and isinstance(option.value, int)
            and not isinstance(option.value, bool)
            and option.value % step
        ):
            value = -(-option.value // step) * step
            combo[name] = Option(value, repr(value))


def combinations(options: dict[str, list[Option]]) -> Iterator[dict[str, Option]]:
    """The best guess first, then each parameter's alternatives one at a time."""
    first = {name: choices[0] for name, choices in options.items()}
    yield dict(first)
    for name, choices in options.items():
        for choice in choices[1:]:
            yield {**first, name: choice}


@dataclass
class Guessed:
    instance: nn.Module
    arguments: dict[str, str]  # parameter -> the text of the value used
    expression: str  # `ViT(image_size=32, ...)`
    args: tuple = ()  # the values it was built with
    kwargs: dict = field(default_factory=dict)


class NoGuess(Exception):
    """Nothing hints at a value for some parameter, or no combination built."""


def satisfiable(cls: type, file_classes: Sequence[type] = ()) -> bool:
    """Whether every required parameter of `cls` has a plausible value (module arguments: a class of
    `file_classes` named like it, one level)."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    siblings = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    required = [
        p for p in params if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return all(
        options_for(p, Use(), siblings, [], nested=MODULE_DEPTH)
        or is_module_class(p.annotation)
        or (p.annotation is p.empty and any(named_like(p.name, c) for c in file_classes if c is not cls))
        for p in required
    )


@dataclass
class Around:
    """What the file says around the class whose arguments are guessed."""

    file_classes: list[type] = field(default_factory=list)  # the Module classes of the file, then of its package
    class_node: ast.ClassDef | None = None  # the class's definition
    names: dict | None = None  # the file's namespace (how a directive names its classes)


def guess(
    cls: type,
    required: list[inspect.Parameter],
    fixed: dict[str, Option],
    around: Around,
    build: Any,
    nested: int = 0,
    retries: int = 2,
) -> Guessed:
    """`build(kwargs)` makes the instance (on the device asked for); `fixed`: values already known
    (a config object of the file). Raises NoGuess with what was missing or the last error."""
    signature = inspect.signature(cls)
    siblings = {p.name: p.default for p in signature.parameters.values() if p.default is not inspect.Parameter.empty}
    uses = uses_in(init_of(around.class_node), [p.name for p in required])
    classes = [c for c in around.file_classes if c is not cls and satisfiable(c, around.file_classes)]
    names = around.names
    convolutional = around.class_node is not None and "Conv" in ast.unparse(around.class_node)
    options: dict[str, list[Option]] = {}
    for param in required:
        choices = (
            [fixed[param.name]]
            if param.name in fixed
            else options_for(param, uses[param.name], siblings, classes, nested, names, convolutional)
        )
        if not choices:
            raise NoGuess(f"nothing says what `{param.name}` is")
        options[param.name] = choices
    kinds = {name: kind_of(name) for name in options}
    positional = [p.name for p in required if p.kind == p.POSITIONAL_ONLY]
    last: BaseException | None = None
    first: dict[str, Option] | None = None
    for count, combo in enumerate(combinations(options)):
        if count >= MAX_BUILDS:
            break
        _fit_heads(combo, kinds, siblings)
        _fit_groups(combo, kinds, siblings)
        first = first or combo
        made, error = _built(cls, combo, positional, build)
        if made is not None:
            return made
        last = error if error is not None else last
    # what the best guess's errors say it must satisfy, solved (only where every guess failed)
    solved = _solved(cls, first, [p.name for p in required if p.name not in fixed], positional, build)
    if solved is not None:
        return solved
    named = _named_by(last, [*signature.parameters.values(), *forwarded(cls, required=False)], options)
    if named is not None and retries:  # `depth` must be passed in: the error names what it wants
        return guess(cls, [*required, named], fixed, around, build, nested, retries - 1)
    raise NoGuess(f"no guess built it (last: {type(last).__name__}: {last})" if last else "no guess built it")


def _built(
    cls: type, combo: dict[str, Option], positional: list[str], build: Any
) -> tuple[Guessed | None, BaseException | None]:
    """The instance `combo` builds, or the error the constructor raised."""
    args = [combo[n].value for n in positional]
    kwargs = {n: o.value for n, o in combo.items() if n not in positional}
    try:
        instance = build(args, kwargs)
    except Exception as error:  # noqa: BLE001  the user's constructor rejecting a guess is expected
        return None, error
    texts = {n: o.text for n, o in combo.items()}
    spelled = [texts[n] for n in positional] + [f"{n}={t}" for n, t in texts.items() if n not in positional]
    return Guessed(instance, texts, f"{cls.__name__}({', '.join(spelled)})", tuple(args), kwargs), None


def _solved(
    cls: type, combo: dict[str, Option] | None, chosen: list[str], positional: list[str], build: Any
) -> Guessed | None:
    """`combo` with its values changed, check after check, to satisfy what the constructor's errors ask
    (constraints.py); None when an error says nothing fxlens can solve."""
    if combo is None:
        return None
    combo = dict(combo)
    kinds = {name: kind_of(name) for name in chosen}
    for _ in range(constraints.MAX_REPAIRS):
        made, error = _built(cls, combo, positional, build)
        if made is not None or error is None:
            return made
        try:
            constraint = constraints.from_error(error)
            changed = (
                constraints.satisfied(constraint, {n: o.value for n, o in combo.items()}, kinds) if constraint else {}
            )
        except Exception:  # noqa: BLE001 - reading the check failed: the guess stays unsolved
            return None
        if not changed or all(combo[n].value == v for n, v in changed.items()):
            return None
        combo.update({n: Option(v, repr(v)) for n, v in changed.items()})
    return None


def _named_by(error: BaseException | None, params: list[inspect.Parameter], given: dict) -> inspect.Parameter | None:
    """A parameter with a default that the constructor's error asks for by name (`depth` must be passed)."""
    text = str(error) if error is not None else ""
    for param in params:
        if (
            param.name not in given
            and param.default is not inspect.Parameter.empty
            and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
            and re.search(rf"[`'\"]{param.name}[`'\"]", text)
        ):
            return param
    return None

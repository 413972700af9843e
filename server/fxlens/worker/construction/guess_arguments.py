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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from fxlens.worker.construction import constraints
from fxlens.worker.construction.module_arguments import (
    Option,
    is_module_class,
    module_options,
    named_instances,
    torch_classes,
)
from fxlens.worker.construction.parameter_uses import Use, forwarded, init_of, uses_in

MAX_BUILDS = 12
_DIM, _HEAD_DIM = 64, 16

# (kind, words of a name that say it): checked in order; the first kind any word matches wins
_KINDS = (
    ("rate", {"dropout", "drop", "rate", "prob", "p"}),
    ("eps", {"eps", "epsilon"}),
    ("length", {"seq", "len", "length", "context", "ctx", "positions", "position", "window"}),
    ("vocab", {"vocab", "ntoken", "ntokens", "tokens", "embeddings"}),
    ("classes", {"classes", "labels", "class", "categories"}),
    ("image", {"image", "img", "resolution", "res"}),
    ("patch", {"patch"}),
    ("channels", {"channels", "chans", "channel", "chan"}),
    ("activation", {"act", "activation", "nonlinearity"}),
    ("kernel", {"kernel"}),
    ("stride", {"stride", "strides"}),
    ("padding", {"padding", "pad"}),
    ("groups", {"groups", "group"}),
    ("ratio", {"ratio", "mult", "factor", "expansion", "multiplier"}),
    ("experts", {"experts", "expert"}),
    ("top", {"topk", "top"}),
    ("heads", {"heads", "head", "nhead", "nheads"}),
    ("depth", {"depth", "depths", "layers", "layer", "blocks", "stages", "nlayers"}),
    (
        "dim",
        {
            "dim",
            "dims",
            "hidden",
            "width",
            "widths",
            "embed",
            "embd",
            "emb",
            "model",
            "features",
            "size",
            "sizes",
            "planes",
            "inplanes",
            "units",
            "hid",
            "latent",
            "ff",
            "ffn",
            "mlp",
            "inner",
            "intermediate",
            "d",
            "filters",
            "embedding",
        },
    ),
    ("norm", {"norm", "normalization", "normalisation"}),
)
# the last word of a parameter that takes a class (`block`, `norm_layer`, `cell_type`), unless counted
_BLOCK_WORDS = {"block", "layer", "cell", "module", "cls", "type", "builder", "fn", "factory"}
# the names that lookups by name (`get_activation(act_fn)`, `Norm[norm_name, 2]`) of every library know
_NAMED = {"activation": ("silu", "gelu", "relu"), "norm": ("batch", "instance", "layer", "group")}
# how many spatial dimensions a layer works in (`spatial_dims` of medical-imaging code): a plane first
_SPATIAL_DIMS = {"spatial_dims", "spatial_dim", "num_spatial_dims", "n_dims", "ndim", "ndims", "dimensions"}
_COUNT_WORDS = {"n", "num", "number", "count"}
_INT_VALUES = {
    "vocab": [100],
    "classes": [10],
    "image": [32, 64],
    "patch": [8, 4],
    "kernel": [3],
    "stride": [1, 2],
    "padding": [1, 0],
    "groups": [1],
    "ratio": [4],
    "length": [16],
    "experts": [4],
    "top": [2, 1],
    "heads": [4, 2],
    "depth": [2, 1],
    "dim": [_DIM, 32],
    "spatial_dims": [2, 3],
}


# kinds that count modules (`num_experts`, `n_heads`, `depth`)
_COUNTED = ("experts", "heads", "depth")


def words(name: str) -> list[str]:
    """`n_embd` -> [n, embd]; `numHeads` -> [num, heads]; `d_model` -> [d, model]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w.lower() for w in re.split(r"[_\W]+", spaced) if w]


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def kind_of(name: str) -> str | None:
    parts = words(name)
    if name.lower() == "p":
        return "rate"
    if name.lower() in _SPATIAL_DIMS:
        return "spatial_dims"
    if any(w in ("dim", "size", "dims", "d") for w in parts) and any(w in ("head", "heads") for w in parts):
        return "head_dim"  # `dim_head`, `head_dim`: the size of one head
    if "block" in parts and "size" in parts:
        return "length"  # nanoGPT's `block_size` is the context length
    for kind, vocabulary in _KINDS:
        if any(w in vocabulary for w in parts):
            return kind
    return None


def _ints(kind: str | None, name: str) -> list[int]:
    if kind == "channels":
        return [16, 3] if "out" in words(name) else [3, 1]
    if kind == "head_dim":
        return [_HEAD_DIM]
    return list(_INT_VALUES.get(kind or "", []))


def _list_options(kind: str | None, use: Use, name: str) -> list[Option]:
    lengths = [use.indexed + 1] if use.indexed >= 0 else [4, 2, 3]
    # a list of channel counts is one per stage (`channels=(16, 16)`): widths, not an image's 3
    item = {"depth": 1, "channels": 16}.get(kind or "", (_ints(kind, name) or [_DIM])[0])
    return [Option([item] * n, repr([item] * n)) for n in lengths]


def _literal_options(values: list[Any]) -> list[Option]:
    return [Option(v, repr(v)) for v in values]


def options_for(
    param: inspect.Parameter,
    use: Use,
    siblings: dict[str, Any],
    classes: list[type],
    nested: bool = False,
    names: dict | None = None,
    convolutional: bool = False,
) -> list[Option]:
    """Plausible values for one required parameter, best first; [] when nothing hints at one.
    `convolutional`: the class convolves (a norm class it takes is a BatchNorm2d before a LayerNorm)."""

    def nested_guess(cls: type, required: list[inspect.Parameter]) -> Guessed:
        return guess(cls, required, {}, Around(), lambda args, kw: cls(*args, **kw), nested=True)

    kind = kind_of(param.name)
    # a list of modules holds as many as a sibling count of that kind is guessed at (`experts` -> 4)
    count = _INT_VALUES[kind][0] if kind in _COUNTED else 2
    modules = module_options(param, count, classes, names or {}, nested, nested_guess)
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
        return _list_options(kind, use, param.name)
    if re.search(r"\bfloat\b", annotation) or kind in ("rate", "eps"):
        value = {"rate": 0.0, "eps": 1e-5}.get(kind or "", float((_ints(kind, param.name) or [1])[0]))
        return _literal_options([value])
    sibling = next(
        (
            v
            for n, v in siblings.items()
            if isinstance(v, int) and not isinstance(v, bool) and kind_of(n) == kind and kind is not None
        ),
        None,
    )
    values = _ints(kind, param.name)
    if sibling is not None and sibling not in values:
        values.insert(0, sibling)  # `in_dim` beside `out_dim=128`: the file's own scale
    if not values and (re.search(r"\bint\b", annotation) or use.numeric):
        values = [8, _DIM]
    if not values and not annotation and not nested:  # `attention` beside a FullAttention of the file
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


def satisfiable(cls: type) -> bool:
    """Whether every required parameter of `cls` has a plausible value (classes aside: one level)."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    siblings = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    required = [
        p for p in params if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return all(options_for(p, Use(), siblings, [], nested=True) or is_module_class(p.annotation) for p in required)


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
    nested: bool = False,
    retries: int = 2,
) -> Guessed:
    """`build(kwargs)` makes the instance (on the device asked for); `fixed`: values already known
    (a config object of the file). Raises NoGuess with what was missing or the last error."""
    signature = inspect.signature(cls)
    siblings = {p.name: p.default for p in signature.parameters.values() if p.default is not inspect.Parameter.empty}
    uses = uses_in(init_of(around.class_node), [p.name for p in required])
    classes = [c for c in around.file_classes if c is not cls and satisfiable(c)]
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

"""Constructions found in the class's package: the calls that build it in another file of the workspace.

Real model files rarely build their own classes: a factory (`def build_b(): return Model(encoder=...)`),
a registry (`@register_model def vit_small(): return ViT(depth=12, ...)`), a config table, a script's
`__main__` block or a test does, in another file. When a class cannot be built alone, fxlens reads
(never runs) the Python files of its package, finds each call to the class by name, and evaluates the
first that works in that file's module, imported as Python imports it:
- a call whose arguments the module's own names give is evaluated as it is (a config table, `__main__`);
- a call inside a function that takes no required argument is reached by calling that function (a
  factory or registry entry), which builds the class on the way;
and the layer counts it asks for (`depth=12`, `config.n_layer = 24`) are shrunk to 2, since the graph
of two blocks shows what the graph of twelve does. Every build says which call made it and what shrank.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from fxlens.worker.construction.package_index import Index, Site, called_names, calls_in, package_folder
from fxlens.worker.load import imports

# constructor arguments and config fields that count layers (shrunk to SHRUNK_LAYERS)
LAYER_COUNTS = {
    "depth",
    "depths",
    "n_layer",
    "n_layers",
    "num_layers",
    "num_hidden_layers",
    "layers",
    "n_blocks",
    "num_blocks",
    "num_encoder_layers",
    "num_decoder_layers",
    "encoder_layers",
    "decoder_layers",
}
SHRUNK_LAYERS = 2

# the arguments a factory that takes some is called with (`build_detector(args)` -> a bag of settings for
# `args`): (positional, keywords, what they were once the factory ran, for the label), or None when fxlens has
# none to give
Supply = Callable[[ast.FunctionDef, str], "tuple[list, dict, Callable[[], str]] | None"]


@dataclass
class Runner:
    """How the package's calls run: `on_device(make)` makes on the build's device; `supply` gives a factory that
    takes arguments what it is called with."""

    on_device: Callable[[Callable[[], Any]], Any]
    supply: Supply | None = None


@dataclass
class Found:
    instance: nn.Module
    detail: str  # "built by `build_b()` in pkg/factory.py:14, depth 12 → 2"
    # the same construction as the class's file spells it (`Decoder(mixer=Mixer(dim=32, depth=2), vocab=100)`),
    # for a pinned directive; "" when an argument has no spelling there
    directive: str = ""


def shrunk(value: Any, changes: list[str], name: str = "") -> Any:
    """`value` with its layer counts (an int argument, or a config object's field) at SHRUNK_LAYERS."""
    if name in LAYER_COUNTS and isinstance(value, int) and not isinstance(value, bool) and value > SHRUNK_LAYERS:
        changes.append(f"{name} {value} → {SHRUNK_LAYERS}")
        return SHRUNK_LAYERS
    if (
        name in LAYER_COUNTS
        and isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and max(value) > SHRUNK_LAYERS
    ):
        changes.append(f"{name} {list(value)} → {[min(v, SHRUNK_LAYERS) for v in value]}")
        return type(value)(min(v, SHRUNK_LAYERS) for v in value)
    fields = vars(value) if hasattr(value, "__dict__") and not isinstance(value, (nn.Module, type)) else {}
    counts = {k: v for k, v in fields.items() if k in LAYER_COUNTS}
    if counts:
        shrunk_fields = {k: shrunk(v, changes, k) for k, v in counts.items()}
        # one entry per layer (`layer_types` beside `num_hidden_layers`): as many as the layers left
        per_layer = {
            old: new
            for k, old in counts.items()
            if isinstance(old, int)
            and not isinstance(old, bool)
            and isinstance(new := shrunk_fields[k], int)
            and new != old
        }
        for key, item in fields.items():
            if isinstance(item, (list, tuple)) and len(item) in per_layer and key not in shrunk_fields:
                shrunk_fields[key] = type(item)(item[: per_layer[len(item)]])
        if any(shrunk_fields[k] is not counts[k] for k in counts):
            try:
                is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
                clone = dataclasses.replace(value, **shrunk_fields) if is_instance else copy.copy(value)
            except (TypeError, ValueError):
                clone = copy.copy(value)
            for key, shrunk_value in shrunk_fields.items():
                setattr(clone, key, shrunk_value)
            return clone
    return value


def module_of(path: str, roots: list[str]) -> Any:
    """The module of the package file at `path`, imported as Python imports it."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    where = imports.placement(path, tree, roots)
    imports.make_importable([where.root])
    return importlib.import_module(where.name)


@dataclass
class Capture:
    """What the calls to the file's classes made while a site ran: `cls`'s instances, and every
    instance's (class, args, kwargs) after shrinking, to spell the construction as a directive."""

    made: list[nn.Module]
    calls: dict[int, tuple[type, tuple, dict]]


def _capturing(cls: type, shrinkable: list[type], changes: list[str]) -> tuple[Capture, Callable[[], None]]:
    """While installed, every call to a class of `shrinkable` (the file's classes) has its layer counts
    shrunk and its arguments kept, and every instance of `cls` is kept."""
    capture = Capture([], {})
    originals = {kind: kind.__dict__["__init__"] for kind in {cls, *shrinkable} if "__init__" in kind.__dict__}

    def shrinking(kind: type, original: Callable[..., None]) -> Callable[..., None]:
        def init(self: nn.Module, *args: Any, **kwargs: Any) -> None:
            if type(self) is kind:
                kwargs = {k: shrunk(v, changes, k) for k, v in kwargs.items()}
                args = tuple(shrunk(a, changes) for a in args)
                capture.calls[id(self)] = (kind, args, kwargs)
            original(self, *args, **kwargs)
            if type(self) is cls and self not in capture.made:
                capture.made.append(self)

        return init

    # each class's own __init__, patched for the run and put back (mypy would only have instances' untouched)
    for kind, original in originals.items():
        kind.__init__ = shrinking(kind, original)  # type: ignore[misc]

    def restore() -> None:
        for kind, original in originals.items():
            kind.__init__ = original  # type: ignore[misc]

    return capture, restore


def _spelled(value: Any, capture: Capture, names: dict, depth: int = 0) -> str | None:
    """`value` as Python source the class's file evaluates to an equal value, or None."""
    if depth > 8:
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, type):  # a block class handed in (`ResidualNet(PlainUnit, [2, 2, 2, 2])`)
        return named(value, names)
    if isinstance(value, (tuple, list)):
        parts = _all_spelled([_spelled(v, capture, names, depth + 1) for v in value])
        if parts is None:
            return None
        if isinstance(value, tuple):
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        return f"[{', '.join(parts)}]"
    kind = type(value)
    if named(kind, names) is None:
        return None
    if dataclasses.is_dataclass(value):
        fields = [f.name for f in dataclasses.fields(value) if f.init]
        spelled = _all_spelled([_spelled(getattr(value, name), capture, names, depth + 1) for name in fields])
        if spelled is None:
            return None
        return f"{named(kind, names)}({', '.join(f'{k}={s}' for k, s in zip(fields, spelled))})"
    if id(value) in capture.calls:
        return _call(capture.calls[id(value)], capture, names, depth + 1)
    return None


def _call(call: tuple[type, tuple, dict], capture: Capture, names: dict, depth: int = 0) -> str | None:
    kind, args, kwargs = call
    parts = _all_spelled([_spelled(a, capture, names, depth) for a in (*args, *kwargs.values())])
    spelling = named(kind, names)
    if spelling is None or parts is None:
        return None
    keywords = [f"{k}={s}" for k, s in zip(kwargs, parts[len(args) :])]
    return f"{spelling}({', '.join([*parts[: len(args)], *keywords])})"


def _all_spelled(parts: list[str | None]) -> list[str] | None:
    """The parts, or None when any of them has no spelling."""
    spelled = [p for p in parts if p is not None]
    return spelled if len(spelled) == len(parts) else None


def named(kind: type, names: dict) -> str | None:
    """How the class's file names `kind`: its own name, or an import expression for a class it does not
    import (`__import__('pkg.blocks', fromlist=['_']).UNet`); None for a class defined in a function."""
    if names.get(kind.__name__) is kind:
        return kind.__name__
    if "<locals>" in kind.__qualname__:
        return None
    return f"__import__({kind.__module__!r}, fromlist=['_']).{kind.__qualname__}"


def takes_arguments(function: ast.FunctionDef) -> bool:
    """Whether `function` has a required parameter."""
    arguments = function.args
    required = len(arguments.posonlyargs) + len(arguments.args) - len(arguments.defaults)
    return bool(required) or any(d is None for d in arguments.kw_defaults)


def _is_factory(function: ast.FunctionDef, call: ast.Call) -> bool:
    """A function fxlens may call to reach `call`: it returns what the call makes (`return Model(...)`, or
    `model = Model.from_name(name)` ... `return model.eval()`), as a factory or registry entry does; a
    script's `main()`, which parses arguments and trains, is never run."""
    holding = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and any(inner is call for inner in ast.walk(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return any(
        isinstance(node, ast.Return)
        and node.value is not None
        and any(
            inner is call or (isinstance(inner, ast.Name) and inner.id in holding) for inner in ast.walk(node.value)
        )
        for node in ast.walk(function)
    )


def package_classes(module_name: str) -> list[type]:
    """The Module classes the top-level package of `module_name` defines, in its modules imported so far."""
    top = module_name.split(".")[0]
    found: dict[int, type] = {}
    for name, loaded in list(sys.modules.items()):
        if loaded is None or top == "torch" or not (name == top or name.startswith(top + ".")):
            continue
        for obj in list(vars(loaded).values()):
            if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == name:
                found[id(obj)] = obj
    return list(found.values())


def _build_at(
    site: Site,
    cls: type,
    own_module: str,
    namespace: dict,
    run: Runner,
) -> tuple[nn.Module | None, list[str], str | None, str, Capture]:
    """(the instance the site's call makes, what shrank, the factory called to reach it (None: the call
    itself ran), how it was reached as the user reads it, what the calls made)."""
    changes: list[str] = []
    shrinkable = package_classes(own_module) + package_classes(namespace.get("__name__", ""))
    capture, restore = _capturing(cls, shrinkable, changes)
    how = f"`{ast.unparse(site.call)[:80]}`"
    reached = None
    try:
        try:
            code = compile(ast.Expression(body=site.call), site.path, "eval")
            run.on_device(lambda: eval(code, namespace))
        except NameError:
            # the call's arguments are the function's locals: run the function (a factory, a registry entry)
            function = namespace.get(site.function.name) if site.function is not None else None
            if site.function is None or not callable(function) or not _is_factory(site.function, site.call):
                raise
            args: list = []
            kwargs: dict = {}
            given = None
            if takes_arguments(site.function):  # `build_detector(args)`: called only with what `supply` gives
                supplied = run.supply(site.function, site.path) if run.supply is not None else None
                if supplied is None:
                    raise
                args, kwargs, given = supplied
            reached = site.function.name
            run.on_device(lambda: function(*args, **kwargs))
            if given is None:
                how = f"`{reached}()`"
            else:
                spelled = ", ".join(a.arg for a in [*site.function.args.posonlyargs, *site.function.args.args])
                how = f"`{reached}({spelled})` ({given()})"
    finally:
        restore()
    return (capture.made[0] if capture.made else None), list(dict.fromkeys(changes)), reached, how, capture


def build_from_package(
    index: Index,
    cls: type,
    own_module: str,
    own_path: str,
    roots: list[str],
    run: Runner,
    names: dict,
) -> Found | None:
    """The class built by the first call in its package that builds it, or None; the layer counts of
    the package's classes shrunk on the way."""
    root = os.path.dirname(package_folder(own_path))
    for site in index.sites(cls.__name__, own_path):
        try:
            namespace = module_of(site.path, roots).__dict__
            where = f" in {site.where(root)}"
            found = _found_at(site, cls, own_module, namespace, run, names, where)
        except (Exception, SystemExit):  # noqa: BLE001  a call that does not work here: the next one may
            continue
        if found is not None:
            return found
    return None


def build_by_own_factory(
    cls: type,
    module: Any,
    tree: ast.Module,
    run: Runner,
    names: dict,
) -> Found | None:
    """The class built by a function of its own file that returns it and takes no required argument (a
    `@register_model` builder, `def build_small(): return Model(...)`) or only ones `run.supply` gives, or
    None; layer counts shrunk."""
    path = getattr(module, "__file__", None) or "<buffer>"
    for call, function, container in calls_in(tree):
        if function is None or cls.__name__ not in called_names(call):
            continue
        try:
            found = _found_at(
                Site(path, call.lineno, call, function, container),
                cls,
                module.__name__,
                module.__dict__,
                run,
                names,
                f" (line {call.lineno})",
            )
        except (Exception, SystemExit):  # noqa: BLE001  a function that does not work here: the next one may
            continue
        if found is not None:
            return found
    return None


def _found_at(
    site: Site,
    cls: type,
    own_module: str,
    namespace: dict,
    run: Runner,
    names: dict,
    where: str,
) -> Found | None:
    instance, shrunk, reached, how, capture = _build_at(site, cls, own_module, namespace, run)
    if instance is None:
        return None
    inside = f" (in `{site.function.name}()`)" if site.function is not None and site.function.name not in how else ""
    detail = f"built by {how}{where}{inside}" + (f", {', '.join(shrunk)}" if shrunk else "")
    spelled = _call(capture.calls[id(instance)], capture, names) if id(instance) in capture.calls else None
    if spelled is None and reached is not None and not shrunk and site.function and not takes_arguments(site.function):
        spelled = _reached_call(reached, namespace, names)  # the factory itself rebuilds what it built
    return Found(instance, detail, spelled or "")


def _reached_call(function: str, namespace: dict, names: dict) -> str | None:
    """`resnet_s()` as the class's file spells the factory `function` of `namespace`'s module."""
    if names.get(function) is namespace.get(function):
        return f"{function}()"
    module = namespace.get("__name__")
    return f"__import__({module!r}, fromlist=['_']).{function}()" if module else None

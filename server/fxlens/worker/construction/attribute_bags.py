"""A constructor parameter that is a bag of settings (`configs.d_model`, `args.n_heads`, `cfg["dim"]`),
built when guessing found nothing for it.

Its values come, in order, from the defaults the repository's scripts declare to argparse, from a
dataclass or NamedTuple of the repository with defaults (script_defaults.py), from a YAML or JSON file of
the repository (config_files.py), and last from a recording object: every attribute the class's file reads from
the bag and none of those declares is answered with a value inferred from how the file uses it (its
name, a comparison with a string, arithmetic), and so is any the constructor reads at run time. Layer
counts shrink to 2. The label names each value's source; the directive spells the bag as a plain
`argparse.Namespace` (or dict) of the values read.
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxlens.worker.construction import config_files, name_kinds, script_defaults
from fxlens.worker.construction import guess_arguments as guessing
from fxlens.worker.construction.module_arguments import Option
from fxlens.worker.construction.package_calls import SHRUNK_LAYERS
from fxlens.worker.construction.parameter_uses import Use, uses_in

# names a settings bag goes by when the file reads nothing from it itself (it hands it to its children)
BAG_NAMES = {"configs", "config", "cfg", "conf", "args", "opt", "opts", "hparams", "hp", "params", "settings"}
INFERRED = "inferred from its use"


@dataclass
class Sources:
    """Where each value of one bag came from: {value name: source}, and what shrank."""

    of: dict[str, str] = field(default_factory=dict)
    shrunk: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # every name read, in order


def recording_namespace(values: dict[str, Any], answer: Callable[[str], Any], sources: Sources) -> argparse.Namespace:
    """argparse's Namespace of the values found; a name none of them holds is answered by `answer` (None:
    AttributeError, as argparse's own would raise) and kept, and every name read is recorded. Once the
    class is built, `settled` makes it a plain Namespace again: what forward reads, and what dynamo and
    export see, is the object a script would pass."""

    class Recording(argparse.Namespace):
        def __getattribute__(self, name: str) -> Any:
            if not name.startswith("_") and name not in sources.read:
                sources.read.append(name)
            return object.__getattribute__(self, name)

        def __getattr__(self, name: str) -> Any:
            value = answer(name) if not name.startswith("_") else None
            if value is None:
                raise AttributeError(f"'Namespace' object has no attribute '{name}'")
            sources.of[name] = INFERRED
            setattr(self, name, value)
            return value

    return Recording(**values)


def settled(bag: Any) -> None:
    """The bag as a plain `argparse.Namespace` (a dict stays the recording one: its class cannot change)."""
    if isinstance(bag, argparse.Namespace):
        bag.__class__ = argparse.Namespace


class RecordingDict(dict):
    """A dict of the values found; a missing key is answered like a recording namespace's attributes."""

    def __init__(self, values: dict[str, Any], answer: Callable[[str], Any], sources: Sources) -> None:
        super().__init__(values)
        self._answer, self._sources = answer, sources

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and key not in self._sources.read:
            self._sources.read.append(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __missing__(self, key: Any) -> Any:
        value = self._answer(key) if isinstance(key, str) else None
        if value is None:
            raise KeyError(key)
        self._sources.of[key] = INFERRED
        self[key] = value
        return value


@dataclass
class Reads:
    """What the class's file reads from one parameter: attribute names, or string keys (a dict)."""

    names: list[str] = field(default_factory=list)
    keyed: bool = False
    uses: dict[str, Use] = field(default_factory=dict)


def bag_reads(tree: ast.Module, class_node: ast.ClassDef | None, params: list[inspect.Parameter]) -> dict[str, Reads]:
    """The required parameters used as bags of settings, each with what the file reads from it (as
    `name.x`, `self.name.x`, `name["x"]`, `name.get("x")`); a parameter named like a bag (`configs`)
    that the file reads nothing from counts too (it is handed on to children)."""
    found: dict[str, Reads] = {}
    for param in params:
        if param.annotation is not inspect.Parameter.empty and not isinstance(param.annotation, str):
            continue  # an annotated parameter says what it is: not a bag fxlens makes up
        reads = _reads(tree, param.name)
        bag_named = param.name.lower() in BAG_NAMES
        if _is_module(class_node, param.name, whole_kept=not bag_named):
            continue
        if reads.names or bag_named:
            found[param.name] = reads
    return found


def _is_module(class_node: ast.ClassDef | None, name: str, whole_kept: bool) -> bool:
    """Whether the class calls the parameter (`name(...)`, or `self.x(...)` after `self.x = name`), or,
    with `whole_kept`, keeps it whole (`self.backbone = backbone`): a module or a function, not settings."""
    if class_node is None:
        return False
    pairs = [  # (target, value) of each assignment, `self.a, self.b = a, b` pair by pair
        pair
        for node in ast.walk(class_node)
        if isinstance(node, ast.Assign)
        for target in node.targets
        for pair in (
            zip(target.elts, node.value.elts)
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
            else [(target, node.value)]
        )
    ]
    kept = {
        target.attr
        for target, value in pairs
        if isinstance(value, ast.Name)
        and value.id == name
        and isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    }
    if kept and whole_kept:
        return True
    for node in ast.walk(class_node):
        func = node.func if isinstance(node, ast.Call) else None
        if (isinstance(func, ast.Name) and func.id == name) or (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in kept
        ):
            return True
    return False


def _reads(tree: ast.Module, name: str) -> Reads:
    """The attributes or keys read from `name` (or `self.name`), and how the file uses each (parameter_uses
    reads a copy of the file in which each `name.x` is one name)."""

    def owner(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id == name) or (
            isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
        )

    reads = Reads()
    # `self.pool = cfg.pool`: what the file does with `self.pool` is what it does with the setting
    kept = {
        node.targets[0].attr: node.value.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Attribute)
        and isinstance(node.targets[0].value, ast.Name)
        and node.targets[0].value.id == "self"
        and isinstance(node.value, ast.Attribute)
        and owner(node.value.value)
    }

    class Flatten(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if owner(node.value) and not node.attr.startswith("_") and node.attr not in ("get", "items", "keys"):
                reads.names.append(node.attr) if node.attr not in reads.names else None
                return ast.copy_location(ast.Name(f"{name}.{node.attr}", ast.Load()), node)
            held = isinstance(node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Load)
            if held and node.attr in kept:
                return ast.copy_location(ast.Name(f"{name}.{kept[node.attr]}", ast.Load()), node)
            return self.generic_visit(node)

        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            key = node.slice
            if owner(node.value) and isinstance(key, ast.Constant) and isinstance(key.value, str):
                reads.keyed = True
                reads.names.append(key.value) if key.value not in reads.names else None
                return ast.copy_location(ast.Name(f"{name}.{key.value}", ast.Load()), node)
            return self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> ast.AST:
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "get"
                and owner(func.value)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                reads.keyed = True
                key = node.args[0].value
                reads.names.append(key) if key not in reads.names else None
                return ast.copy_location(ast.Name(f"{name}.{key}", ast.Load()), node)
            return self.generic_visit(node)

    flat = Flatten().visit(copy.deepcopy(tree))
    uses = uses_in(flat, [f"{name}.{attr}" for attr in reads.names])
    reads.uses = {attr: uses[f"{name}.{attr}"] for attr in reads.names}
    return reads


def bag_options(
    reads: dict[str, Reads], path: str, roots: list[str], infer: Callable[[str, Use], Any]
) -> tuple[dict[str, Option], dict[str, Sources]]:
    """One bag per parameter of `reads`, its values from (in order) the repository's script whose argparse
    defaults cover most of what the file reads, its dataclass or NamedTuple, its YAML or JSON file, and
    the rest inferred (`infer(name, use)`, None when nothing hints at a value); with each bag's Sources."""
    options: dict[str, Option] = {}
    labels: dict[str, Sources] = {}
    folder = script_defaults.repository_folder(path, roots)
    arguments, classes = script_defaults.scripts(folder)
    files = config_files.config_files(folder)
    for param, read in reads.items():
        sources = Sources()
        values: dict[str, Any] = {}
        declared = [
            (_best(arguments, read.names), "the argparse defaults of {}"),
            (_best(classes, read.names, whole=False), "the defaults of {}"),
            (_best(files, read.names, whole=False), "{}"),
        ]
        for best, how in declared:
            if best is None:
                continue
            where = os.path.relpath(best.path, folder)
            what = how.format(f"{best.declared_by} ({where})" if best.declared_by else where)
            for key, value in best.defaults.items():
                if key not in values:
                    values[key], sources.of[key] = _shrunk(key, value, sources), what
        for name in read.names:
            if name not in values:
                value = infer(name, read.uses.get(name, Use()))
                if value is not None:
                    values[name], sources.of[name] = value, INFERRED

        def answer(name: str, read: Reads = read) -> Any:
            return infer(name, read.uses.get(name, Use()))

        bag: Any = (RecordingDict if read.keyed else recording_namespace)(values, answer, sources)
        options[param] = Option(bag, param)
        labels[param] = sources
    return options, labels


def _best(found: list[Any], names: list[str], whole: bool = True) -> Any:
    """What declares most of the names read (a Script or a ConfigFile), the shallowest on a tie; for a bag
    handed on whole (no names read) the script declaring most, when `whole`."""
    settings = lambda s: set(s.defaults)  # noqa: E731
    wanted = set(names)
    if not found or (not wanted and not whole):
        return None
    best = max(found, key=lambda s: (len(wanted & settings(s)) if wanted else len(settings(s)), -s.path.count(os.sep)))
    return best if not wanted or wanted & settings(best) else None


def _shrunk(name: str, value: Any, sources: Sources) -> Any:
    if (
        name_kinds.kind_of(name) == "depth"
        and isinstance(value, int)
        and not isinstance(value, bool)
        and value > SHRUNK_LAYERS
    ):
        sources.shrunk.append(f"{name} {value} → {SHRUNK_LAYERS}")
        return SHRUNK_LAYERS
    return value


def spelled(bag: Any, sources: Sources, names: dict) -> str:
    """The bag as the class's file evaluates it: an `argparse.Namespace` of the values read, or a dict of
    all its values (`ConvEncoder(**ddconfig)` hands on every key without reading one)."""
    if isinstance(bag, dict):
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in dict(bag).items()) + "}"
    values = vars(bag)
    read = {k: values[k] for k in sources.read if k in values}
    namespace = "argparse.Namespace" if names.get("argparse") is argparse else "__import__('argparse').Namespace"
    return f"{namespace}({', '.join(f'{k}={v!r}' for k, v in read.items())})"


def label(param: str, sources: Sources, whole: bool = False) -> str:
    """`configs: d_model, n_heads from the argparse defaults of run.py (e_layers 3 → 2); c_out inferred`;
    `whole` (a dict passed whole): what else each source gave is counted (`and 6 more`)."""
    by_source: dict[str, list[str]] = {}
    for name in sources.read:
        if name in sources.of:
            by_source.setdefault(sources.of[name], []).append(name)
    unread = {
        source: sum(1 for n, s in sources.of.items() if s == source and n not in sources.read) for source in by_source
    }
    parts = [
        f"{', '.join(names)}{f' (and {unread[source]} more)' if whole and unread[source] else ''} "
        f"{'' if source == INFERRED else 'from '}{source}"
        for source, names in by_source.items()
    ]
    shrank = [change for change in sources.shrunk if change.split(" ")[0] in sources.read]
    shrunk = f" ({', '.join(shrank)})" if shrank else ""
    return f"{param}: {'; '.join(parts)}{shrunk}"


def inferred(name: str, use: Use) -> Any:
    """A value for a setting nothing declares, from its name and how the file uses it; None: no hint."""
    if not name.isidentifier():
        return None
    if use.truth and not use.numeric:
        return False  # a switch (`if args.mix_channels`): off, the plainer model
    param = inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    options = guessing.options_for(param, use, {}, [], nested=guessing.MODULE_DEPTH)
    return options[0].value if options else None


def guess_with_bags(
    cls: type,
    required: list[inspect.Parameter],
    fixed: dict[str, Option],
    around: guessing.Around,
    build: Callable[[list, dict], Any],
    where: tuple[ast.Module, str, list[str]],
) -> tuple[guessing.Guessed, str] | None:
    """`cls` built with a bag for each of its bag parameters (the rest guessed as before), and the label
    saying where each value came from; None when it has none, or it still does not build. `where`: the
    class's file's tree, its path and the workspace roots."""
    tree, path, roots = where
    try:
        reads = bag_reads(tree, around.class_node, [p for p in required if p.name not in fixed])
        if not reads:
            return None
        bags, sources = bag_options(reads, path, roots, inferred)
        made = guessing.guess(cls, required, {**fixed, **bags}, around, build)
    except Exception:  # noqa: BLE001 - NoGuess, or reading the repository failed: the class stays as it was
        return None
    names = around.names or {}
    for param, option in bags.items():
        settled(option.value)
        text = spelled(option.value, sources[param], names)
        made.arguments[param] = text
        made.expression = made.expression.replace(f"{param}={param}", f"{param}={text}", 1)
    others = [f"{k}={v}" for k, v in made.arguments.items() if k not in bags]
    labels = [label(p, sources[p], isinstance(bags[p].value, dict)) for p in bags]
    return made, "; ".join([*labels, *([", ".join(others)] if others else [])])


def factory_bags(roots: list[str], function: ast.FunctionDef, path: str) -> tuple[list, dict, Callable[[], str]] | None:
    """A bag for each required parameter of a factory (`def build_detector(args): ... return
    SetDetector(...)`), when every one is a bag of the settings the factory reads, filled as a class's
    bag is: (positional, keywords, their label once the factory has read them); None otherwise."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    required = positional[: len(positional) - len(arguments.defaults)]
    keywords = [a for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is None]
    if any(a.annotation is not None for a in [*required, *keywords]):
        return None  # an annotated parameter says what it is: not a bag fxlens makes up
    params = [inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in [*required, *keywords]]
    reads = bag_reads(ast.Module(body=[function], type_ignores=[]), None, params)
    if not params or len(reads) != len(params):
        return None
    bags, sources = bag_options(reads, path, roots, inferred)
    values = [bags[a.arg].value for a in required]
    given = {a.arg: bags[a.arg].value for a in keywords}
    return values, given, lambda: "; ".join(label(p.name, sources[p.name]) for p in params)

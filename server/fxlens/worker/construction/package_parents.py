"""Children of networks in other files: a block its own file cannot give inputs (its network lives in another
file of the package, `blocks.py` beside `model.py`) is traced as the instance that network makes, built at
its defaults, with what one run of the network hands it — as a user sees the block in their model.

The networks are found by reading the package (package_index.Index): the classes whose code calls the block,
directly or through the functions and classes that do (`get_up_block(...)` returning an `UpBlock` that
builds an `Upsample`), nearest first."""

from __future__ import annotations

import ast
import functools
import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from fxlens.report import Build
from fxlens.worker.construction import build as building
from fxlens.worker.construction import directive as directives
from fxlens.worker.construction import package_calls, package_index
from fxlens.worker.construction.infer import guessed_params, infer_inputs
from fxlens.worker.construction.recording import record_children
from fxlens.worker.levels import fx as trace_fx

# how far up the chain of callers the networks are looked for, how many are built at most, and the time
# building and running them may add to a file's first result (reading the package is not counted: it is
# read once per analysis, within package_index's own file bounds, and a slow read must not starve the builds)
MAX_DEPTH = 4
MAX_NETWORKS = 6
MAX_SECONDS = 20.0


@dataclass
class Network:
    path: str
    name: str


def networks_building(index: package_index.Index, names: list[str], own_path: str) -> list[Network]:
    """The classes of the package's other files whose code builds one of `names`, nearest first."""
    seen, frontier, found = set(names), list(names), []
    for _ in range(MAX_DEPTH):
        callers = []
        for name in frontier:
            for site in index.sites(name, own_path):
                container = site.container
                if container is None or container.name in seen:
                    continue
                seen.add(container.name)
                callers.append(container.name)
                if isinstance(container, ast.ClassDef):
                    found.append(Network(site.path, container.name))
        frontier = callers
    return found


def _at_defaults(cls: type) -> bool:
    try:
        parameters = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]  # a class's own
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in list(parameters)[1:])


def adopt(
    index: package_index.Index, wanted: dict[str, type], own_path: str, roots: list[str]
) -> dict[str, building.Example]:
    """Per class name of `wanted`: the first instance a network of another file builds, with the inputs a
    run of that network gave it (classes no network reached are left out)."""
    adopted: dict[str, building.Example] = {}
    root = os.path.dirname(package_index.package_folder(own_path))
    networks = networks_building(index, list(wanted), own_path)
    built, deadline = 0, time.monotonic() + MAX_SECONDS
    for network in networks:
        if built >= MAX_NETWORKS or len(adopted) == len(wanted) or time.monotonic() > deadline:
            break
        try:
            module = package_calls.module_of(network.path, roots)
            cls = module.__dict__.get(network.name)
            if not (isinstance(cls, type) and issubclass(cls, nn.Module) and _at_defaults(cls)):
                continue
            with torch.device("meta"):
                instance = cls()
        except (Exception, SystemExit):  # noqa: BLE001  a network that does not build here: the next may
            continue
        types = {kind for name, kind in wanted.items() if name not in adopted}
        if not any(type(sub) in types for sub in instance.modules()):
            continue
        built += 1
        rebuild = functools.cache(cls)
        where = f"{network.name}() in {os.path.relpath(network.path, root)}"
        constructor = f"__import__({module.__name__!r}, fromlist=[{network.name!r}]).{network.name}()"
        adopted.update(_children(instance, types, where, constructor, network.path, rebuild))
    return adopted


def _children(
    network: nn.Module, types: set[type], where: str, constructor: str, path: str, rebuild: Callable[[], nn.Module]
) -> dict[str, building.Example]:
    try:
        _, graph = trace_fx.trace_so_far(network, path, guessed_params(network))
        inferred = infer_inputs(network, graph, "meta", rebuild)
        if inferred.inputs is None:
            return {}
        calls, _ = record_children(
            network, inferred.inputs, inferred.kwargs, inferred.dims, types, inferred.tensors, rebuild
        )
    except Exception:  # noqa: BLE001  the network's own failure: its children get nothing from it
        return {}
    found: dict[str, building.Example] = {}
    for sub_path, sub in network.named_modules():
        name = type(sub).__name__
        if type(sub) not in types or name in found or id(sub) not in calls:
            continue
        args, kwargs, dims = calls[id(sub)]
        try:
            args, kwargs = directives.checked_call(sub, args, kwargs)
        except TypeError:
            continue
        build = Build(
            "found",
            "parent",
            detail=f"the `{sub_path}` instance built by {where}",
            device="meta",
            directive=f"{constructor}.get_submodule({sub_path!r})",
        )
        found[name] = building.Example(
            sub, build, inputs=args, kwargs=kwargs, dims=dims, rebuild=building.part_of(rebuild, sub_path)
        )
    return found

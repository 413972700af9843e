"""The directive fxlens drafts for a class it has no graph for (draft_report.Draft): the constructor's required
arguments with fxlens's best values, forward's inputs, each unknown marked; and what a drafted directive
that still holds a placeholder means when it runs.

Known values are the ones fxlens built or ran with; a value it has no guess for, or one its guesses did
not get past, is unknown: the directive holds `placeholder(name)` there, which no file defines, so the
directive stops at that name and the diagnostic says which argument it stands for.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import torch
from torch import nn

from fxlens.draft_report import Draft, DraftValue
from fxlens.report import Build, Diagnostic
from fxlens.worker.construction import consumers, parameter_uses
from fxlens.worker.construction.blame import blame
from fxlens.worker.construction.build import Example
from fxlens.worker.construction.guess_arguments import options_for, satisfiable
from fxlens.worker.construction.infer import guessed_params
from fxlens.worker.construction.module_arguments import Option, made
from fxlens.worker.load.discover import ClassSource

# how each kind of build names where its values come from (the rest say it in Build.detail)
_FROM = {"guessed": "fxlens's guess, which built it", "config": "the config's defaults", "directive": "your directive"}


def _text(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}"[:300] if error is not None else ""


def _required(cls: type) -> list[inspect.Parameter]:
    """The constructor's parameters without a default, then the base-class ones it hands on (`**kwargs`)."""
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return []
    own = [
        p for p in params if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return own + parameter_uses.forwarded(cls)


def _split(directive: str, cls: type, source: str) -> Draft | None:
    """The constructor expression a build reproduces (`Net(unit=PlainUnit, stages=[2, 2])`) cut into its
    callee and one value per argument; None when it is no call fxlens can cut (`**options`)."""
    try:
        call = ast.parse(directive, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    names = [p.name for p in _signature_params(cls)] if _calls_class(call, cls) else []
    values = [
        DraftValue(names[i] if i < len(names) else f"arg{i}", ast.unparse(arg), source, keyword=False)
        for i, arg in enumerate(call.args)
    ]
    values += [DraftValue(k.arg or "", ast.unparse(k.value), source) for k in call.keywords]
    return Draft(ast.unparse(call.func), "inputs", values)


def _calls_class(call: ast.Call, cls: type) -> bool:
    func = call.func
    return (isinstance(func, ast.Name) and func.id == cls.__name__) or (
        isinstance(func, ast.Attribute) and func.attr == cls.__name__
    )


def _signature_params(cls: type) -> list[inspect.Parameter]:
    try:
        return [
            p
            for p in inspect.signature(cls).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return []


def _proposals(
    cls: type, classes: list[type], names: dict[str, Any], class_node: ast.ClassDef | None
) -> list[tuple[DraftValue, Option | None]]:
    """Each required constructor argument: the first value fxlens's guessing proposes for it (with the
    option that makes it), or unknown."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    siblings = {p.name: p.default for p in signature.parameters.values() if p.default is not inspect.Parameter.empty}
    required = _required(cls)
    uses = parameter_uses.uses_in(parameter_uses.init_of(class_node), [p.name for p in required])
    found: list[tuple[DraftValue, Option | None]] = []
    for param in required:
        try:
            with torch.device("meta"):  # a proposal that builds a module (a `block` instance) allocates nothing
                options = options_for(
                    param, uses[param.name], siblings, [c for c in classes if c is not cls], names=names
                )
        except Exception:  # noqa: BLE001  a proposal that fails to form is no proposal: the value stays unknown
            options = []
        positional = param.kind == param.POSITIONAL_ONLY
        if options:
            found.append((DraftValue(param.name, options[0].text, "fxlens's guess", not positional), options[0]))
        else:
            found.append((DraftValue(param.name, "", f"nothing says what `{param.name}` is", not positional), None))
    return found


def guessed_arguments(
    cls: type, classes: list[type], names: dict[str, Any], class_node: ast.ClassDef | None = None
) -> list[DraftValue]:
    return [value for value, _ in _proposals(cls, classes, names, class_node)]


def _rejected(
    cls: type, proposals: list[tuple[DraftValue, Option | None]], path: str, class_node: ast.ClassDef
) -> None:
    """Build the class from the proposals (on meta); where `__init__` rejects them, the arguments its
    failing line reads become unknown, saying what they were and what the line said."""
    args = [made(o.value) for v, o in proposals if o is not None and not v.keyword]
    kwargs = {v.name: made(o.value) for v, o in proposals if o is not None and v.keyword}
    try:
        with torch.device("meta"):
            cls(*args, **kwargs)
        return
    except Exception as error:  # noqa: BLE001  the user's constructor rejecting a guess is what is looked for
        found = blame(error, path, class_node)
        if found is None:
            return
        for value, _ in proposals:
            if value.name in found.parameters:
                value.source = f"line {found.line} rejects fxlens's guess `{value.text}`: {_text(error)}"[:300]
                value.text = ""


def for_unbuilt(
    cls: type, classes: list[type], names: dict[str, Any], why: str, class_node: ast.ClassDef | None = None
) -> Draft:
    """A class no construction built: fxlens's proposals for its arguments, fxlens to find the inputs.
    `why` is what stopped the build (the last error of fxlens's guesses, or what nothing said)."""
    proposals = _proposals(cls, classes, names, class_node)
    guessed_all = all(v.known for v, _ in proposals)
    if guessed_all and class_node is not None:
        _rejected(cls, proposals, str(names.get("__file__") or ""), class_node)
    arguments = [value for value, _ in proposals]
    return Draft(cls.__name__, "guess" if guessed_all else "construction", arguments, None, why[:300])


def _layer_text(layer: nn.Module) -> str:
    """`Conv2d (3 input channels)`: what a person filling in the input needs to know of its first layer."""
    name = type(layer).__name__
    for attribute, what in (("in_channels", "input channels"), ("in_features", "features"), ("num_embeddings", "ids")):
        value = getattr(layer, attribute, None)
        if isinstance(value, int):
            return f"{name} ({value} {what})"
    return name


def _input_source(instance: nn.Module, graph: Any, param: str) -> str:
    try:
        consumer = consumers.first_consumer(graph, instance, param)
    except Exception:  # noqa: BLE001  a graph that does not say where the input goes leaves it unsaid
        consumer = None
    return f"first used by {_layer_text(consumer.layer)}" if consumer else "no layer it reaches says its shape"


def unknown_inputs(instance: nn.Module, graph: Any) -> list[DraftValue]:
    """One unknown per input forward needs, saying where it goes first (`Draft.problem` says what fxlens's
    guesses met)."""
    return [
        DraftValue(name, "", _input_source(instance, graph, name), keyword=False) for name in guessed_params(instance)
    ]


def for_built(cls: type, build: Build, inputs: list[DraftValue], problem: BaseException | None) -> Draft:
    """A class built, but with no inputs forward runs on: the construction that built it, the inputs."""
    source = _FROM.get(build.how, build.detail or build.how)
    draft = _split(build.directive, cls, source) or Draft(cls.__name__, "inputs", built=build.directive)
    draft.inputs = inputs
    draft.missing = "guess" if problem is not None else "inputs"
    draft.problem = _text(problem)
    return draft


def _module_classes(namespace: dict[str, Any]) -> list[type]:
    """The Module classes of the file that a parameter taking a class (`unit`, `block`) may get."""
    return [
        v
        for v in list(namespace.values())
        if isinstance(v, type)
        and issubclass(v, nn.Module)
        and v.__module__ == namespace.get("__name__")
        and satisfiable(v)
    ]


def for_class(source: ClassSource, example: Any, namespace: dict[str, Any]) -> Draft | None:
    """The draft for a class without a graph: `example` is its Example, or why it was not built (a
    CannotBuild, a Diagnostic, a failing directive's list). A directive of the user's gets one only when it
    builds the class but gives no inputs fxlens could find (the draft completes it); a directive that fails
    says what to change itself, and one that holds placeholders is the user's to fill in."""
    cls = namespace.get(source.name)
    if not isinstance(cls, type):
        return None
    if isinstance(example, Example):
        if example.inputs is not None or example.unfilled:
            return None
        problem = example.problems[-1] if example.problems else None
        inputs = unknown_inputs(example.instance, example.graph)
        if example.build.directive:
            return for_built(cls, example.build, inputs, problem)
        # a parent's child, which no expression of its own builds: its constructor as fxlens guesses it
        arguments = guessed_arguments(cls, _module_classes(namespace), namespace, source.node)
        return Draft(cls.__name__, "guess" if problem else "inputs", arguments, inputs, _text(problem))
    if source.directive:
        return None
    why = example.message if isinstance(example, Diagnostic) else str(example)
    if isinstance(example, list):
        why = example[0].message if example else ""
    return for_unbuilt(cls, _module_classes(namespace), namespace, why, source.node)

"""Building every Module class of a loaded file: the construction, the inputs, the children's adoption
(the half of an Analysis before any level is traced; see analysis/analyse.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from torch import nn

from fxlens.report import Build, Diagnostic
from fxlens.worker.construction import build as building
from fxlens.worker.construction import directive as directives
from fxlens.worker.construction import lazy, package_parents, placeholders, setup_calls
from fxlens.worker.construction.children import in_plain_words
from fxlens.worker.construction.infer import guessed_params, infer_inputs
from fxlens.worker.construction.notes import directive_column, directive_failed, over_bound
from fxlens.worker.construction.package_index import Index
from fxlens.worker.construction.recording import Recorded, record_children
from fxlens.worker.failures.classify import classify, whole_line
from fxlens.worker.levels import fx as trace_fx
from fxlens.worker.levels.memory_bound import BoundedRebuild, OverBound, limited
from fxlens.worker.load import loader
from fxlens.worker.load.discover import ClassSource


class Building:
    """The steps that make each class's Example (mixed into Analysis, which holds the state)."""

    # the state and the step runner Analysis provides (analysis/analyse.py)
    path: str
    lines: list[str]
    roots: list[str]
    namespace: dict[str, Any]
    package_index: Index
    guess_memory_mb: int  # the real memory a build without a directive may take (levels/memory_bound.py)
    _at: Callable[..., Any]

    def _is_module(self, module: Any, source: ClassSource) -> bool:
        obj = module.__dict__.get(source.name)
        return isinstance(obj, type) and issubclass(obj, nn.Module)

    def _build_all(self, sources: list[ClassSource], loaded: loader.Loaded) -> dict[str, Any]:
        """Each class: its Example, or the Diagnostic saying why it could not be built.

        The models a directive builds go first, then the largest: the children they build are traced as
        those very instances, with the inputs they really receive, instead of being built alone and fed
        guessed inputs (the user's directive says which model is the real one).
        """
        examples: dict[str, Any] = {s.name: self._at(s.name, self._build_one, s, loaded) for s in sources}
        pending = [s for s in sources if isinstance(examples[s.name], building.Example)]
        done: dict[str, building.Example] = {}  # each class's example its children were adopted from
        asked_package = False
        while pending:
            pending.sort(
                key=lambda s: (
                    examples[s.name].build.how != "directive",
                    -sum(1 for _ in examples[s.name].instance.modules()),
                )
            )
            source = pending.pop(0)
            example = done[source.name] = examples[source.name]
            if example.inputs is None and not example.unfilled:  # a drafted directive's inputs are the user's to fill
                self._at(source.name, self._infer, example)
            if example.inputs is not None and lazy.unmaterialised(example.instance):
                self._at(source.name, self._materialise, example)
            adopted = self._at(source.name, self._adopt_children, source.name, example, sources, examples)
            # a child adopted again, now with inputs, hands them on to its own children in turn
            pending += [
                s
                for s in sources
                if s.name in adopted and done.get(s.name) is not examples[s.name] and s not in pending
            ]
            if not pending and not asked_package:
                # what the file could not feed, a network of another file of the package may
                asked_package = True
                pending = self._adopt_from_package_networks(sources, examples)
        return examples

    def _adopt_from_package_networks(self, sources: list[ClassSource], examples: dict[str, Any]) -> list[ClassSource]:
        """The classes without inputs traced as instances that networks of other files build (see
        package_parents); the sources adopted, so that they hand inputs on to their own children."""
        # every example has been through `_infer` by now: no guess is tried again here
        wanted = {
            s.name: self.namespace[s.name]
            for s in sources
            if not s.directive
            and isinstance(self.namespace.get(s.name), type)
            and _without_good_inputs(examples.get(s.name))
        }
        if not wanted:
            return []
        adopted = package_parents.adopt(self.package_index, wanted, self.path, self.roots)
        examples.update(adopted)
        return [s for s in sources if s.name in adopted]

    def _build_one(self, source: ClassSource, loaded: loader.Loaded) -> Any:
        last_error: BaseException | None = None
        stage = "construction"
        for device in ("meta", "cpu"):
            try:
                # a directive is the user's own choice of sizes (only the trace's memory limit holds); anything
                # else is a guess, and bounded
                with limited(None if source.directive else self.guess_memory_mb):
                    example = self._construct(source, loaded, device)
            except OverBound as over:
                return over_bound(source, over, self.path, self.lines)
            except directives.Unfilled as unfilled:
                span = whole_line(source.directive_line or source.line, self.lines)
                return [placeholders.unfilled(source.name, unfilled.names, "construction", span)]
            except building.CannotBuild as reason:
                if source.directive:
                    return directive_failed(source, reason, "construction", self.path, self.lines)
                return reason
            except directives.DirectiveFailed as failed:
                last_error, stage = failed.error, failed.stage
                continue
            except RecursionError as error:  # no device changes a recursion: the CPU would only run it again
                last_error = error
                break
            except Exception as error:  # noqa: BLE001  the user's constructor can raise anything: tried on the CPU
                last_error = error
                continue
            unhashable = self._unhashable(source, example.instance)
            if unhashable is not None:
                return unhashable
            if device == "cpu":
                example.build.detail += " (built on CPU: the meta device failed; weights were allocated)"
            example.rebuild = BoundedRebuild(partial(self._rebuild_on_cpu, source, loaded), self.guess_memory_mb)
            return example
        # every try that did not return recorded its error
        assert last_error is not None
        if source.directive:
            return directive_failed(source, last_error, stage, self.path, self.lines)
        return classify(last_error, self.path, self.lines, "construction", None, whole_line(source.line, self.lines))

    def _unhashable(self, source: ClassSource, instance: nn.Module) -> Diagnostic | None:
        """torch keeps modules in sets (named_modules, parameters(), export): an instance without a hash,
        as `@dataclass` makes with eq=True, fails in torch itself, for the user too."""
        try:
            hash(instance)
            return None
        except TypeError:
            span = whole_line(source.line, self.lines)
            return Diagnostic.at(
                span,
                "error",
                "construction",
                f"{source.name} instances are unhashable (its __hash__ is None, as @dataclass makes it "
                "with eq=True), and torch needs hashable modules",
                "torch.nn.Module keeps modules in sets: named_modules(), parameters(), state_dict(), "
                "tracing and export all fail on an unhashable one, outside fxlens too.",
                f"Give {source.name} identity hashing: `@dataclass(eq=False)` (or `unsafe_hash=True`).",
            )

    def _construct(self, source: ClassSource, loaded: loader.Loaded, device: str) -> building.Example:
        """The class built on `device` from its directive, or alone (see build.build_alone)."""
        cls = loaded.module.__dict__[source.name]
        if source.directive:
            return directives.from_directive(source, cls, loaded.module, device, directive_column(self.lines, source))
        alone = partial(building.build_alone, source, cls, loaded.module, loaded.tree, device, self.roots)
        instance, build = alone(self.package_index)
        try:
            setup_calls.set_up(instance, build, self.path, self.roots, partial(building.on_device, device))
        except Exception:  # noqa: BLE001  a set-up call that fails here: the class as built without it
            instance, build = alone(self.package_index)
        return building.Example(instance, build)

    def _rebuild_on_cpu(self, source: ClassSource, loaded: loader.Loaded) -> nn.Module:
        """The instance `_build_one` made on meta, made again on the CPU (for code that needs values)."""
        return self._construct(source, loaded, "cpu").instance

    def _infer(self, example: building.Example) -> None:
        # a failed trace still says where each input flows first; the fx level reports the failure itself
        example.graph, graph = trace_fx.trace_so_far(example.instance, self.path, guessed_params(example.instance))
        inferred = infer_inputs(example.instance, graph, example.build.tensors, example.rebuild)
        if inferred.inputs is not None:
            example.inputs, example.dims = inferred.inputs, inferred.dims
            example.kwargs = {**(example.kwargs or {}), **inferred.kwargs}
            example.reasons = inferred.reasons
            example.build.inputs_source = "inferred"
            example.build.tensors, example.build.tensors_reason = inferred.tensors, inferred.reason
        elif inferred.error is not None:
            example.problems.append(inferred.error)

    def _materialise(self, example: building.Example) -> None:
        error = lazy.materialise(example.instance, example.inputs or (), example.kwargs)
        if error is not None:
            example.problems.append(error)

    def _adopt_children(
        self, parent_name: str, parent: building.Example, sources: list[ClassSource], examples: dict[str, Any]
    ) -> list[str]:
        """Classes of this file that `parent` builds, traced as its instances with the inputs they got;
        the names adopted.

        A child the parent's run never reached (the run failed first, or the parent has no inputs)
        is still adopted when it cannot be built alone: fx needs no inputs, and its hint then says
        why none were recorded."""
        # by the class itself, not its name: `nn.LayerNorm` is not the file's own `LayerNorm`
        # a child a bigger parent adopted without inputs (its run failed) is adopted again where it gets some
        # so is a child of an instance this parent no longer is (it was built again, elsewhere): it follows it
        wanted = {
            self.namespace[s.name]
            for s in sources
            if not s.directive
            and s.name != parent_name
            and (not _recorded_by_parent(examples.get(s.name)) or _left_behind(examples[s.name], parent_name, parent))
        }
        if not any(type(sub) in wanted for sub in parent.instance.modules()):
            return []
        calls: Recorded
        if parent.inputs is None:
            calls, failure = {}, self._why_no_inputs(parent_name, parent)
        else:
            calls, error = record_children(
                parent.instance, parent.inputs, parent.kwargs, parent.dims, wanted, parent.build.tensors, parent.rebuild
            )
            failure = f"running {parent_name} on its inputs failed: {in_plain_words(error)}" if error else ""
        adopted = []
        for path, sub in parent.instance.named_modules():
            name = type(sub).__name__
            current = examples.get(name)
            if type(sub) not in wanted or name in adopted:
                continue
            build = Build(
                "parent", "parent", detail=f"the `{path}` instance built by {parent_name}", device=parent.build.device
            )
            child = building.Example(sub, build, parent=parent_name, rebuild=building.part_of(parent.rebuild, path))
            if id(sub) in calls:
                args, kwargs, dims = calls[id(sub)]
                try:
                    child.inputs, child.kwargs = directives.checked_call(sub, args, kwargs)
                except TypeError:
                    continue
                child.dims = dims
            elif not failure or getattr(current, "parent", None) or not self._worse_than_parents(current):
                continue
            else:
                child.build.inputs_source = "none"
                child.unrecorded = f"no inputs were recorded for `{path}`: {failure}"
            examples[name] = child
            adopted.append(name)
        return adopted

    def _worse_than_parents(self, alone: Any) -> bool:
        """Whether the instance a parent built (with no inputs recorded) beats the class built alone:
        when that failed, guessed its arguments, or has no inputs either."""
        if isinstance(alone, building.Example) and alone.build.how != "guessed" and alone.inputs is None:
            self._infer(alone)
        return _without_good_inputs(alone)

    def _why_no_inputs(self, parent_name: str, parent: building.Example) -> str:
        problem = parent.problems[-1] if parent.problems else None
        if problem is None:
            return f"fxlens found no example inputs for {parent_name}"
        return f"running {parent_name} on guessed inputs failed: {in_plain_words(problem)}"

    # -- tracing ---------------------------------------------------------------------------------


def _without_good_inputs(example: Any) -> bool:
    """Not built, built on guessed arguments, or without inputs."""
    return not isinstance(example, building.Example) or example.build.how == "guessed" or example.inputs is None


def _recorded_by_parent(example: Any) -> bool:
    return isinstance(example, building.Example) and bool(example.parent) and example.inputs is not None


def _left_behind(child: building.Example, parent_name: str, parent: building.Example) -> bool:
    """A child adopted from an earlier instance of `parent_name`, which `parent` now replaces."""
    return child.parent == parent_name and not any(sub is child.instance for sub in parent.instance.modules())

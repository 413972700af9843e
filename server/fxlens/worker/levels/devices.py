"""Run user code on the cheapest tensors that can run it: meta, then fake, then small real CPU tensors.

fxlens builds modules on the meta device: no weights are allocated, but no value exists either, so code
that reads one (`.item()`, `.tolist()`, `if x.sum() > 0:`, `torch.distributions`' argument checks,
`nonzero`, NumPy) cannot run there. That is a limit of fxlens's meta device, not a bug of the user's, so
the same step is retried on fake tensors (made from the meta tensors: no memory, and `.item()` gives an
unbacked size), then on real CPU tensors when the module is small enough to hold its weights.

`run` is the one entry point. A step receives the module with its parameters and buffers swapped for the
chosen kind (the same Python objects: hooks and submodule identities still hold) and the inputs converted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.nn.parameter import is_lazy
from torch.nn.utils.stateless import _reparametrize_module

from fxlens.report import Build
from fxlens.worker.failures.limits import MAX_CPU_ELEMENTS
from fxlens.worker.levels import instance_state, memory_bound

KINDS = ("meta", "fake", "cpu")
SEED = 0

# What the meta device cannot do, by the text of the error it raises: (needle, what it cannot do)
_META_LIMITS = (
    ("cannot be called on meta tensors", "read a tensor's value (`.item()`, `bool()`, an `if` on a tensor)"),
    ("Cannot copy out of meta tensor", "copy a tensor's data out (`.tolist()`, `.cpu()`, `.numpy()`)"),
    ("can't convert meta device type tensor to numpy", "convert a tensor to NumPy"),
    (
        "data-independent implementation does not exist",
        "compute an output whose size depends on values (`nonzero`, `unique`, masked selection)",
    ),
    ("not on the expected device meta", "mix with tensors the code makes on the CPU (a factory without `device=`)"),
    ("found two different devices", "mix with tensors the code makes on the CPU (a factory without `device=`)"),
    ("found at least two devices", "mix with tensors the code makes on the CPU (a factory without `device=`)"),
    ("from the 'Meta' backend", "run an operator that has no meta implementation"),
    # torch's meta kernel for `_grouped_mm` applies the GPU kernel's dtype rule; the CPU kernel takes float32
    ("Expected inputs of BF16 type", "run `_grouped_mm` on float32 (its meta kernel has the GPU's bf16-only rule)"),
)
# What fake tensors cannot do: decide on a value (they have none either) or leave torch.
_DECIDES_ON_VALUES = (
    ("GuardOnDataDependentSymNode", "DataDependentOutputException", "data-dependent"),
    "decide on a value (they have none either)",
)
_FAKE_LIMITS = (
    _DECIDES_ON_VALUES,
    (("not supported for tensor subclasses",), "leave torch (`.numpy()`)"),
    (("DynamicOutputShapeException", "UnsupportedOperatorException", "FakeTensor"), "run this operator"),
)
_WORD_META = re.compile(r"\bmeta\b", re.IGNORECASE)


@dataclass(frozen=True)
class RunOptions:
    """How `run` treats the tensors of the kinds it tries (see `run`)."""

    fake_device: str = "cpu"
    weightless_cpu: bool = False
    traces: bool = False


@dataclass
class Ran:
    """What a step returned, on which kind of tensors, and why not on meta (empty when it ran on meta)."""

    value: Any
    tensors: str
    reason: str = ""


class MetaDeviceLimit(Exception):
    """No kind of tensor fxlens may use could run the step; the message says what each could not do."""

    def __init__(self, summary: str, error: BaseException, errors: str) -> None:
        super().__init__(f"{summary} ({errors}), so fxlens has no tensors that can run this code")
        self.summary, self.error = summary, error


def meta_limit(error: BaseException) -> str | None:
    """What the meta device could not do, when `error` is its artefact rather than the user's bug."""
    text = f"{type(error).__name__}: {error}"
    for needle, what in _META_LIMITS:
        if needle in text:
            return what
    if _WORD_META.search(str(error)):
        return "run this step"
    return None


def _fake_limit(error: BaseException, traces: bool = False) -> str | None:
    text = f"{type(error).__name__}: {error}"
    # a step that traces (torch.export) decides on values with fake tensors of its own, whatever it is given:
    # its data-dependent errors are torch's answer for the code, not a limit of the tensors fxlens chose
    for limit in _FAKE_LIMITS:
        needles, what = limit
        if not (traces and limit is _DECIDES_ON_VALUES) and any(needle in text for needle in needles):
            return what
    return meta_limit(error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


ModuleT = TypeVar("ModuleT", bound=nn.Module)


def run(
    step: Callable[[ModuleT, Any], Any],
    module: ModuleT,
    inputs: Any,
    start: str = "meta",
    rebuild: Callable[[], nn.Module] | None = None,
    kinds: tuple[str, ...] = KINDS,
    options: RunOptions | None = None,
) -> Ran:
    """`step(module, inputs)` on the first kind of tensors (from `start`, among `kinds`, in that order) that
    can run it.

    `rebuild` makes the same module on the CPU (its real initial weights); without it, CPU weights are
    made from the meta tensors' shapes. The user's own errors are raised as they are; when only fxlens's
    tensors were the problem, a MetaDeviceLimit says what each kind could not do. `options.fake_device`: the device
    fake tensors say they are on (the inductor level compiles for a GPU on fake `cuda` tensors).
    `options.weightless_cpu`: a module too big for real CPU weights runs on CPU weights that hold one value each,
    repeated without memory (for a step that reads the run's path, not its numbers); an error there is
    taken for an artefact of those weights and the next kind is tried. `options.traces`: the step traces the module
    (torch.export), so a data-dependent error on fake tensors is the code's own.
    """
    options = options if options is not None else RunOptions()
    state, fake_device = _state(module), options.fake_device
    on_meta = any(t.device.type == "meta" for t in state.values())
    if state and not on_meta and "cpu" in kinds:
        start = "cpu"  # built on the CPU (the meta device could not build it): its tensors are real
    order = [kind for kind in kinds if KINDS.index(kind) >= KINDS.index(start)] or [start]
    reasons: list[str] = []
    errors: list[str] = []
    last: BaseException | None = None
    bound = memory_bound.bound_of(rebuild)
    for kind in order:
        if kind != "meta" and any(is_lazy(tensor) for tensor in state.values()):
            reasons.append("a lazy layer (`nn.Lazy*`) has no shapes to give other tensors before its first forward")
            break
        weightless = kind == "cpu" and on_meta and _elements(module) > MAX_CPU_ELEMENTS
        if weightless and not options.weightless_cpu:
            reasons.append(
                f"the module has {_elements(module) / 1e6:.0f} M parameter elements, too many to "
                f"run on real CPU tensors (limit {MAX_CPU_ELEMENTS // 1_000_000} M)"
            )
            break
        bounded = bound if kind == "cpu" and not weightless else None
        try:
            if bounded is not None and on_meta:
                fits = memory_bound.bound_for(bounded)
                if (needed := memory_bound.estimated_bytes(module)) > fits.megabytes * memory_bound.MEGABYTE:
                    raise memory_bound.OverBound(fits, None, needed)
            with (
                memory_bound.limited(bounded),
                _swapped(module, "weightless" if weightless else kind, rebuild, fake_device) as convert,
                instance_state.kept(module),
            ):
                value = step(module, convert(inputs))
        except memory_bound.OverBound as over:
            assert over.bound is not None  # `limited` sets it
            reasons.append(f"real CPU tensors would pass {over.bound.words()}: {over.words()}")
            last = over
            break
        except Exception as error:
            if weightless:
                reasons.append("CPU weights of one repeated value cannot run it")
                errors.append(_first_line(error)[:160])
                last = error
                continue
            limit = meta_limit(error) if kind == "meta" else _fake_limit(error, options.traces)
            if kind == "cpu" or not limit:
                raise  # the user's own error: it fails alike on every kind of tensor
            last = error
            reasons.append(f"{'the meta device' if kind == 'meta' else 'fake tensors'} cannot {limit}")
            errors.append(_first_line(error)[:160])
            continue
        name = _NAMES["weightless" if weightless else kind]
        return Ran(value, kind, "; ".join(reasons) + (f": ran on {name} instead" if reasons else ""))
    raise MetaDeviceLimit("; ".join(reasons), last or RuntimeError("no tensors to run on"), "; ".join(errors))


_NAMES = {
    "meta": "meta tensors",
    "fake": "fake tensors",
    "cpu": "small real CPU tensors",
    "weightless": "CPU tensors whose weights hold one repeated value",
}
# the meta device's failure for code that makes its own tensors without `device=` (CPU ones)
MIXES_DEVICES = "mix with tensors the code makes on the CPU (a factory without `device=`)"


def only_mixed_devices(reason: str) -> bool:
    """Whether the meta device failed only for mixing in CPU tensors the code made (its `Ran.reason`, or a
    MetaDeviceLimit's summary): fake CPU tensors then run it as real ones would, values never read."""
    return reason.startswith(f"the meta device cannot {MIXES_DEVICES}")


def mixed_devices_reason(kind: str) -> str:
    """The Build's `tensors_reason` of a step rerun on `kind` tensors for mixing devices on meta."""
    return f"the meta device cannot {MIXES_DEVICES}: ran on {_NAMES[kind]} instead"


def fits_on_cpu(module: nn.Module) -> bool:
    """Whether `run` may give the module real CPU weights (MAX_CPU_ELEMENTS)."""
    return _elements(module) <= MAX_CPU_ELEMENTS


def _elements(module: nn.Module) -> int:
    tensors = (*module.parameters(), *module.buffers())
    return sum(t.numel() for t in tensors if not is_lazy(t))  # (a lazy layer's have no size yet)


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    named = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    return dict(named)


@contextmanager
def _swapped(
    module: nn.Module, kind: str, rebuild: Callable[[], nn.Module] | None, fake_device: str = "cpu"
) -> Iterator[Callable[[Any], Any]]:
    """The module's tensors replaced by `kind` ones for the duration; yields the inputs' converter."""
    state = _state(module)
    if kind == "meta":
        yield lambda inputs: convert(inputs, "meta")
        return
    with ExitStack() as stack:
        stack.callback(_refresh_rnn_weights, module)  # runs last, once the module's own tensors are back
        if kind == "fake":
            mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
            swapped = _fake_state(mode, state, fake_device)
            stack.enter_context(_reparametrize_module(module, swapped))
            _swap_attributes(stack, module, lambda tensor: _fake(mode, tensor, fake_device))
            stack.enter_context(mode)
            yield lambda inputs: convert(inputs, "fake", mode, fake_device)
            return
        stack.enter_context(torch.random.fork_rng())
        torch.manual_seed(SEED)
        real = _weightless_state(state) if kind == "weightless" else _real_state(state, rebuild)
        stack.enter_context(_reparametrize_module(module, real))
        _swap_attributes(
            stack, module, lambda tensor: _cpu_like(tensor, lambda shape, dtype: torch.rand(shape).to(dtype))
        )
        yield lambda inputs: convert(inputs, "cpu")


def _swap_attributes(stack: ExitStack, module: nn.Module, swap: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """The meta tensors a module keeps as plain attributes (`self.rope = rotary_table(...)` of a set-up call, not
    a parameter or buffer) swapped as its state is, for the run; put back when `stack` closes."""
    for sub in module.modules():
        held = {
            name: value
            for name, value in vars(sub).items()
            if type(value) is torch.Tensor and value.device.type == "meta"
        }
        for name, value in held.items():
            setattr(sub, name, swap(value))
            stack.callback(setattr, sub, name, value)


def _refresh_rnn_weights(module: nn.Module) -> None:
    """An RNN keeps its weights in a second list (`_flat_weights`) that restoring the swapped attributes
    leaves pointing at the swapped tensors: rebuild it from the attributes."""
    for sub in module.modules():
        if isinstance(sub, nn.RNNBase):
            sub._init_flat_weights()


def _real_state(state: dict[str, torch.Tensor], rebuild: Callable[[], nn.Module] | None) -> dict[str, torch.Tensor]:
    rebuilt = _state(rebuild()) if rebuild is not None else {}
    real = {}
    for name, tensor in state.items():
        if tensor.device.type != "meta":
            real[name] = tensor
        elif name in rebuilt and rebuilt[name].shape == tensor.shape:
            real[name] = rebuilt[name]
        else:  # positive values: a parameter used as a scale or a standard deviation stays valid
            real[name] = _cpu_like(tensor, lambda shape, dtype: torch.rand(shape).to(dtype))
        real[name] = _as_parameter(real[name], tensor)
    return real


def _weightless_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """CPU tensors of the meta ones' shapes that hold one value each (an expanded scalar): a 7B model's
    weights in no memory. Small positive floats keep norms and scales valid; indices are 0, masks true."""
    weightless = {}
    for name, tensor in state.items():
        if tensor.device.type != "meta":
            weightless[name] = tensor
            continue
        one = _cpu_like(tensor.new_empty(()), lambda shape, dtype: torch.full(shape, 0.02, dtype=dtype))
        weightless[name] = _as_parameter(one.expand(tensor.shape), tensor)
    return weightless


def _as_parameter(tensor: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    """A parameter stays a parameter (torch.export checks that its state dict holds nn.Parameters)."""
    if isinstance(original, nn.Parameter) and not isinstance(tensor, nn.Parameter):
        return nn.Parameter(tensor, requires_grad=original.requires_grad)
    return tensor


def _fake_state(mode: Any, state: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    """The module's tensors as fake ones of `mode`, its parameters still parameters."""
    fakes: dict[str, torch.Tensor] = {}
    flagged: set[int] = set()
    for name, tensor in state.items():
        fake = _fake(mode, tensor, device)  # (the same fake again for a tensor the module holds twice)
        if not isinstance(tensor, nn.Parameter):
            fakes[name] = fake
        elif id(fake) in flagged:  # a second name of a tied parameter: a parameter of its own, as ever
            fakes[name] = nn.Parameter(fake, requires_grad=tensor.requires_grad)
        else:
            # made for this swap alone: flagged in place, as nn.Parameter flags a tensor subclass, without
            # the detach nn.Parameter makes first (a dispatch through the fake mode: 0.3 ms a parameter)
            fake.requires_grad_(tensor.requires_grad)
            fake._is_param = True
            flagged.add(id(fake))
            fakes[name] = fake
    return fakes


def fake_state(mode: Any, module: nn.Module, device: str = "cpu") -> dict[str, torch.Tensor]:
    """The module's parameters and buffers as fake tensors of `mode` (to swap in with `_reparametrize_module`)."""
    return _fake_state(mode, _state(module), device)


def _fake(mode: Any, tensor: torch.Tensor, device: str = "cpu") -> torch.Tensor:
    """A fake tensor made from a meta one, on the CPU unless `device` says otherwise (tensors the code
    makes itself are CPU ones)."""
    meta = tensor if tensor.device.type == "meta" else tensor.to("meta")
    return mode.fake_tensor_converter.from_meta_and_device(mode, meta, torch.device(device))


def _cpu_like(tensor: torch.Tensor, floats: Callable[[tuple, torch.dtype], torch.Tensor]) -> torch.Tensor:
    shape = tuple(tensor.shape)
    if tensor.dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return floats(shape, tensor.dtype)
    return torch.zeros(shape, dtype=tensor.dtype)  # an index of 0 is in range of any table


def convert(value: Any, kind: str, mode: Any = None, fake_device: str = "cpu") -> Any:
    """Inputs as `kind` tensors: meta (shapes only), fake (made from meta) or CPU (real values kept; a meta
    tensor becomes deterministic values: normal floats, zero integers, true booleans)."""
    if isinstance(value, torch.Tensor):
        if kind == "meta":
            if value.device.type == "meta":
                return value
            if isinstance(value, FakeTensor):  # recorded in a fake run: only its sizes outlive the run
                return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
            return value.to("meta")
        if kind == "fake":
            return _fake(mode, value, fake_device)
        if value.device.type != "meta":
            return value
        return _cpu_like(value, lambda shape, dtype: torch.randn(shape).to(dtype))
    if isinstance(value, tuple):
        return tuple(convert(item, kind, mode, fake_device) for item in value)
    if isinstance(value, list):
        return [convert(item, kind, mode, fake_device) for item in value]
    if isinstance(value, dict):
        return {key: convert(item, kind, mode, fake_device) for key, item in value.items()}
    return value


def note(build: Build, ran: Ran) -> None:
    """Record on the report's Build the furthest kind of tensors any step of this class needed. A step that
    starts on fake tensors by design (the aten export, the joint graph) needed nothing the meta device lacks."""
    if ran.tensors == "fake" and not ran.reason:
        return
    if KINDS.index(ran.tensors) > KINDS.index(build.tensors):
        build.tensors, build.tensors_reason = ran.tensors, ran.reason

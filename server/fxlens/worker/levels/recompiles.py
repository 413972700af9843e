"""Whether the sizes a compiled graph fixed can vary without compiling again, proven by running it.

torch.compile's first compile fixes every size of its inputs (the guards say so), so a call at another
batch size compiles again. The proof runs the module on real CPU tensors at the example's sizes and at
its varying sizes grown (the free sizes fxlens named, B and T; without them, the first size of each input
of two or more dims: the batch), three ways: compiled as the user compiles (`torch.compile(m)`), with
`dynamic=True`, and with `torch._dynamo.mark_dynamic` on those sizes. Recompiles are counted with dynamo's own
counter, the one its compile ids come from (`convert_frame.FRAME_COMPILE_COUNTER`: compiles per frame; "0/1" is
frame 0 compiled again), not with frames compiled: the grown call may take a branch the first did not, whose frame
compiles for the first time. Each compiled output is compared with eager's at the same size. Run in a forked
process beside the level's own run (the other core).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fxlens.guard_report import DynamicProof
from fxlens.worker.failures.classify import message_text
from fxlens.worker.failures.limits import bounded
from fxlens.worker.levels import devices
from fxlens.worker.levels.dynamo import fresh_dynamo, no_function_modes
from fxlens.worker.levels.forked import ForkedCall, Lost
from fxlens.worker.levels.values import GROWTH

SEED = 20261206
# seven forward runs and three compiles on real CPU weights: proven for modules up to this many parameter and
# buffer elements (20 MB as float32), so that the level, which waits for it, is not held by a large model
MAX_PROOF_ELEMENTS = 5_000_000


def varying(example: Any) -> list[dict[int, str] | None]:
    """Per input of `example.flat()`, the sizes that vary in practice: the free sizes fxlens named, else
    the first size (the batch) of each tensor of two or more dims. Tuples of tensors are left as they are."""
    if example.dims and any(example.dims):
        return [d if isinstance(d, dict) else None for d in example.dims]
    return [{0: "B"} if isinstance(v, torch.Tensor) and v.dim() >= 2 else None for v in example.flat()]


def start(example: Any, names: list[str]) -> ForkedCall | None:
    """The proof started in a forked process, or None when there is nothing to prove: no inputs, no size
    that varies, or a module larger than MAX_PROOF_ELEMENTS."""
    if example.inputs is None or _elements(example.instance) > MAX_PROOF_ELEMENTS:
        return None
    dims = varying(example)
    if not any(dims):
        return None
    return ForkedCall(lambda: _prove(example, dims, names))


def _elements(module: torch.nn.Module) -> int:
    return sum(t.numel() for t in (*module.parameters(), *module.buffers()))


def finish(proof: ForkedCall | None) -> DynamicProof | None:
    if proof is None:
        return None
    try:
        found = proof.result()
    except Lost as lost:
        return DynamicProof(error=f"the process proving it: {lost}")
    return DynamicProof(**found)


def _prove(example: Any, dims: list[dict[int, str] | None], names: list[str]) -> dict[str, Any]:
    marks = [(names[i] if i < len(names) else f"input {i}", sorted(d)) for i, d in enumerate(dims) if d]
    said = {"marks": [[name, d] for name, d in marks]}
    try:
        ran = devices.run(
            lambda m, call: _compare(m, call, example, dims),
            example.instance,
            (example.inputs, example.kwargs),
            "cpu",
            example.rebuild,
            kinds=("cpu",),
        )
    except Exception as error:  # noqa: BLE001  the user's forward failing at the grown size: said, not offered
        return {**said, "error": bounded(message_text(error))}
    return {**said, **ran.value}


def _grown(value: Any, free: dict[int, str] | None, generator: torch.Generator) -> Any:
    if not isinstance(value, torch.Tensor) or not free:
        return value
    shape = [size * GROWTH.get(free[d], 2) if d in free else size for d, size in enumerate(value.shape)]
    if value.is_floating_point():
        return torch.randn(shape, generator=generator, dtype=value.dtype)
    return torch.zeros(shape, dtype=value.dtype)  # ids, masks: zero is valid wherever the example's values are


def _compare(module: torch.nn.Module, call: tuple, example: Any, dims: list) -> dict[str, Any]:
    args, kwargs = call
    generator = torch.Generator().manual_seed(SEED)
    flat = (*args, *kwargs.values())
    grown = tuple(_grown(v, d, generator) for v, d in zip(flat, [*dims, *[None] * len(flat)]))
    calls = [(tuple(args), dict(kwargs)), example.unflat(grown)]
    sizes = [[[int(v.shape[i]) for i in sorted(d)] for v, d in zip(f, dims) if d] for f in (flat, grown)]
    with torch.no_grad():
        eager = [module(*a, **k) for a, k in calls]
    static, _ = _compiles(module, calls, dims, False)
    dynamic, dynamic_out = _compiles(module, calls, dims, False, dynamic=True)
    try:
        marked, _ = _compiles(module, calls, dims, True)
        marked_recompiles: int | None = marked[1] - marked[0]
        marked_error = ""
    except Exception as error:  # noqa: BLE001  a size the model fixes: torch refuses to mark it
        marked_recompiles, marked_error = None, bounded(message_text(error).splitlines()[0])
    return {
        "sizes": sizes,
        "static_recompiles": static[1] - static[0],
        "dynamic_recompiles": dynamic[1] - dynamic[0],
        "marked_recompiles": marked_recompiles,
        "marked_error": marked_error,
        "outputs": _same(eager, dynamic_out),
    }


def _compiles(module: torch.nn.Module, calls: list, dims: list, mark: bool, **options: Any) -> tuple[list[int], list]:
    """How many times dynamo had compiled a frame again after each call (its own counter), and the outputs."""
    from torch._dynamo.convert_frame import FRAME_COMPILE_COUNTER

    counts, outputs = [], []
    with fresh_dynamo(), no_function_modes(), torch.no_grad():
        compiled = torch.compile(module, backend="eager", **options)
        for args, kwargs in calls:
            args, kwargs = _copies(args), {k: _copies((v,))[0] for k, v in kwargs.items()}
            if mark:
                for value, free in zip((*args, *kwargs.values()), dims):
                    if isinstance(value, torch.Tensor) and free:
                        torch._dynamo.mark_dynamic(value, sorted(free))
            outputs.append(compiled(*args, **kwargs))
            counts.append(sum(n - 1 for n in FRAME_COMPILE_COUNTER.values() if n > 1))
    return counts, outputs


def _copies(values: tuple) -> tuple:
    """Tensors marked dynamic keep the mark: each run marks its own copies."""
    return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in values)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _same(eager: list, compiled: list, close: Callable[..., bool] = torch.allclose) -> str:
    """ "equal" (bit for bit), "close (rtol=1e-05, atol=1e-06)", or what differs."""
    pairs = [(e, c) for a, b in zip(eager, compiled) for e, c in zip(_tensors(a), _tensors(b), strict=False)]
    if len(pairs) != sum(len(_tensors(a)) for a in eager):
        return "differ: the compiled module returned other values"
    if all(e.shape == c.shape and torch.equal(e, c) for e, c in pairs):
        return "equal"
    if all(e.shape == c.shape and close(e, c, rtol=1e-5, atol=1e-6) for e, c in pairs):
        return "close (rtol=1e-05, atol=1e-06)"
    return "differ"

"""What inductor generates for one call of a module, without building or running a kernel.

`torch.compile(m)(x)` spends most of a cold compile in the C++ compiler (measured on torch 2.13 CPU: 13.5 s
of a two-Linear MLP's cold compile was g++ building its two kernels). The kernels' source, the wrapper
that calls them and inductor's provenance mappings are all made before that: `GraphLowering` writes the
wrapper module (`output_code.py`) and only then loads it, and loading it is what compiles its kernels
(`async_compile.cpp_pybinding(...)` at its top level). So:

- dynamo captures the graphs as torch.compile does, and hands each to a backend of ours that runs
  inductor's own `compile_fx` on it, then returns the captured graph itself, so the call goes on eagerly
  (on fake tensors: no memory, no values) and a graph break's next graph gets compiled too;
- `PyCodeCache.load_by_key_path` is replaced, for the compile only, by a loader that reads the written
  wrapper and loads nothing, so no kernel is compiled, linked or run;
- inductor's provenance tracking (`config.trace.provenance_tracking_level = 1`, what tlparse's view and
  `inductor_provenance_tracking_node_mappings.json` come from) is read in the process where it is made, at
  the moment inductor dumps it, along with the post-grad graph it speaks of.

What still compiles C++ is inductor's probe of the CPU's vector instruction sets (`cpu_vec_isa`, a few tiny
programs that decide how kernels are vectorised); it is cached in the private folder (inductor_cache.py),
so it costs its g++ runs once per folder and torch build.

Plain data out (kernel_map.Compiled): the mapping to report nodes (kernel_map.py) needs no torch.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import torch

from fxlens.worker.levels.inductor_cache import compiled_key
from fxlens.worker.levels.kernel_map import Compiled

# of the time left before the worker stops the trace, what the compile leaves to report (and to the levels
# after it): a compile cut short fails as a timeout of this level, not of the whole class
MARGIN_SECONDS, MARGIN_SHARE = 1.5, 0.05


class CompileTimeout(BaseException):
    """The compile ran out of the trace's time. A BaseException: torch's `except Exception` (dynamo wraps a
    backend's errors) lets it through."""


@contextmanager
def _within(deadline: float | None) -> Iterator[None]:
    """CompileTimeout raised in the code run inside once `deadline` (less the margin) passes. Only the call
    itself is armed: the cleanups around it (dynamo's reset, the function modes put back) always run whole."""
    if deadline is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    left = deadline - time.monotonic()
    budget = left - max(MARGIN_SECONDS, MARGIN_SHARE * left)
    if budget <= 0:
        raise CompileTimeout()
    armed = [True]

    def expire(signum: int, frame: Any) -> None:
        if armed[0]:
            armed[0] = False
            raise CompileTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        yield
    finally:
        try:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


class NotBuilt(RuntimeError):
    """Raised by a kernel fxlens did not build, if anything ever called it."""


def _target(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # aten.addmm.default
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)


def _post_grad(graph: Any) -> dict:
    """The post-grad graph's computing nodes, in order: name -> {"target", "inputs", "stack_trace"}."""
    return {
        node.name: {
            "target": _target(node),
            "inputs": [i.name for i in node.all_input_nodes],
            "stack_trace": node.meta.get("stack_trace") or "",
        }
        for node in graph.nodes
        if node.op not in ("placeholder", "output")
    }


def _unbuilt(path: str) -> types.ModuleType:
    """What the loader gives inductor instead of the wrapper module: nothing of it runs."""
    module = types.ModuleType("fxlens_unbuilt_inductor_module")
    module.__file__ = path

    def call(*args: Any, **kwargs: Any) -> Any:
        raise NotBuilt("fxlens reads inductor's generated code without building its kernels")

    module.__dict__["call"] = call  # (a module made here: its attributes are whatever is put in it)
    return module


@contextmanager
def _capturing(into: list[Compiled], written: list[str]) -> Iterator[None]:
    """Inductor's config and hooks for one compile: provenance on, caches that would skip the compile off,
    no compile worker pool, no debug folder, and the wrapper read instead of loaded."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config, debug, ir
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.virtualized import V

    dump = debug.dump_inductor_provenance_info
    provenance = debug.set_kernel_post_grad_provenance_tracing
    extern: dict[str, str] = {}

    def load_by_key_path(key: str, path: str, linemap: Any = None, attrs: Any = None) -> types.ModuleType:
        written.append(path)
        return _unbuilt(path)

    def tracing(node_schedule: Any, kernel_name: str, is_extern: bool = False) -> int | None:
        handle = provenance(node_schedule, kernel_name, is_extern)
        if is_extern and handle is not None:  # a library call, or an op inductor runs as ATen's own (no lowering)
            extern[f"{kernel_name}:{handle}"] = "fallback" if isinstance(node_schedule, ir.FallbackKernel) else "extern"
        return handle

    def dumped() -> dict:
        mappings = dump()
        graph = V.graph
        path = getattr(graph, "cache_path", None)
        code = ""
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as source:
                code = source.read()
        device = getattr(graph, "device_type", None) or "cpu"
        into.append(
            Compiled(
                code=code,
                mappings={
                    name: {key: list(value) for key, value in mapping.items()}  # (plain data)
                    for name, mapping in mappings.items()
                    if isinstance(mapping, dict)
                },
                post=_post_grad(graph.module.graph),
                pre={name: {"stack_trace": trace} for name, trace in debug._inductor_pre_grad_node_stack_trace.items()},
                extern=dict(extern),
                stack_traces={k: list(v) for k, v in debug._inductor_kernel_stack_trace.items()},
                device=str(device),
            )
        )
        extern.clear()
        return mappings

    with ExitStack() as stack:
        stack.enter_context(
            config.patch(
                {
                    "trace.provenance_tracking_level": 1,
                    "trace.enabled": False,  # (TORCH_COMPILE_DEBUG=1 in the user's environment: no folder in the cwd)
                    "fx_graph_cache": False,  # a cache hit skips the compile, and with it the provenance
                    "fx_graph_remote_cache": False,
                    "compile_threads": 1,  # nothing to compile in parallel: no pool of compile workers
                }
            )
        )
        stack.enter_context(
            functorch_config.patch({"enable_autograd_cache": False, "enable_remote_autograd_cache": False})
        )
        stack.enter_context(mock.patch.object(PyCodeCache, "load_by_key_path", staticmethod(load_by_key_path)))
        stack.enter_context(mock.patch.object(debug, "dump_inductor_provenance_info", dumped))
        stack.enter_context(mock.patch.object(debug, "set_kernel_post_grad_provenance_tracing", tracing))
        stack.enter_context(debug.reset_provenance_globals())
        yield


def compile_graphs(
    module: torch.nn.Module, args: tuple, kwargs: dict, deadline: float | None = None, cache: Any | None = None
) -> list[Compiled]:
    """Every graph torch.compile(module)(*args, **kwargs) would hand inductor, compiled to code, in order.

    Raises what torch.compile raises (a lowering that fails, no C++ compiler: see compiler_problem), and
    CompileTimeout when the compile would outlast `deadline` (time.monotonic(): when the worker stops the trace).
    `cache`: an inductor_cache.CompiledCache, which answers for a graph compiled before."""
    import torch._dynamo
    from torch._inductor.compile_fx import compile_fx

    from fxlens.worker.levels.dynamo import fresh_dynamo, no_function_modes

    compiled: list[Compiled] = []
    written: list[str] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Any:
        key = compiled_key(gm, example_inputs, cache.machine) if cache is not None else None
        found = cache.get(key) if cache is not None and key is not None else None
        if found is not None:
            compiled.append(found)
        else:
            before = len(compiled)
            # (inductor's own entry point, as torch.compile's "inductor" backend calls it)
            compile_fx(gm, example_inputs)
            if cache is not None and key is not None and len(compiled) == before + 1:
                cache.put(key, compiled[-1])
        return gm.forward  # the call goes on eagerly: the kernels were never built

    try:
        with fresh_dynamo(), _capturing(compiled, written), no_function_modes():
            with _within(deadline):
                torch._dynamo.optimize(backend, nopython=False)(module)(*args, **kwargs)
    finally:
        for path in written:  # the wrappers' text is in `compiled`; the folder keeps only what is reused
            try:
                os.remove(path)
                os.rmdir(os.path.dirname(path))  # (inductor's two-letter folder, when nothing else is in it)
            except OSError:
                pass
    return compiled


def compiler_problem() -> str | None:
    """Why inductor could not build CPU kernels here (no C++ compiler it can run), or None.

    fxlens builds no kernel, but torch.compile does, and inductor's vectorisation probe needs the compiler:
    without one, torch.compile fails, so the level says that instead of showing code torch would not make."""
    from torch._inductor import config
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        get_cpp_compiler()
    except Exception as error:  # noqa: BLE001  InvalidCxxCompiler, or the compiler's own failure
        wanted = [c for c in (config.cpp.cxx if isinstance(config.cpp.cxx, (list, tuple)) else (config.cpp.cxx,)) if c]
        return (
            f"inductor found no C++ compiler it can run (it looked for {', '.join(wanted) or 'none'}; "
            f"CXX={os.environ.get('CXX', '(unset)')}): {type(error).__name__}: {error}".rstrip(": ")
        )
    return None

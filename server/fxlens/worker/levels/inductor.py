"""The `inductor` level: the kernels torch.compile makes of the forward on this machine, each tied to the
user's lines by inductor's own provenance mappings (kernel -> post-grad -> pre-grad -> stack trace).

Like dynamo it is deep and lazy: traced after every class's fx and aten levels are out, and only when asked
for (settings, `--level inductor`) or wanted (a hover, the graph view). What it costs and why it builds no
kernel: inductor_capture.py. Where inductor writes: inductor_cache.py. The nodes: kernel_map.py.

The forward runs as torch.compile(m)(x) would run it, on fake tensors (no memory, any size: the code is
generated for the example's sizes, not from values), or on small real CPU tensors when the forward reads a
value (an `if` on a tensor, `.item()`: as for dynamo, fake tensors lose the graphs after such a break). The
kernels are for the CPU (C++) unless the worker's torch has CUDA, then for the GPU (Triton); what a GPU
would run differs from what a CPU runs, and the hover says which this is.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from fxlens.report import Diagnostic, LevelResult, Span
from fxlens.worker.failures.classify import classify, whole_line
from fxlens.worker.levels import devices, inductor_cache
from fxlens.worker.levels.aten import innermost_user_line
from fxlens.worker.levels.dynamo import reads_values
from fxlens.worker.levels.kernel_map import map_kernels

LEVEL = "inductor"
KINDS = ("fake", "cpu")


def _timeout(span: Span, started: float) -> LevelResult:
    seconds = time.perf_counter() - started
    diagnostic = Diagnostic.at(
        span,
        "error",
        "timeout",
        f"torch.compile did not finish within the trace's time (stopped after {seconds:.1f} s)",
        "The inductor level compiles the forward as torch.compile would; this class's compile "
        "needs longer than fxlens.timeoutSeconds leaves it. Its other levels are not affected.",
        "Raise fxlens.timeoutSeconds (or `--timeout` on the command line), or compile a smaller "
        "example (a directive with fewer layers).",
        level=LEVEL,
    )
    return LevelResult(LEVEL, False, diagnostics=[diagnostic], seconds=seconds)


def device() -> str:
    """What torch.compile would compile for here: a GPU when the worker's torch has one, else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def _compiler_diagnostic(problem: str, span: Span) -> Diagnostic:
    return Diagnostic.at(
        span,
        "error",
        "compiler",
        f"torch.compile cannot build CPU kernels here: {problem}",
        "On the CPU, inductor compiles its kernels with a C++ compiler; torch.compile fails "
        "without one, so fxlens shows no kernels either.",
        "Install g++ (e.g. `apt-get install g++`), or point the CXX environment variable of "
        "the interpreter fxlens runs at a working compiler, then restart fxlens.",
        level=LEVEL,
    )


def _line_torch_names(error: BaseException, path: str) -> int | None:
    """The line of the user's file torch's message names for a compile failure, which has no user frame in
    its own traceback (the forward is being compiled, not run). Dynamo ends the message with the frame of
    the node that failed ("Found from: File ..., line N", or "from user code:"); before that, inductor's
    message quotes its inputs' stack traces, which are other lines."""
    seen: set[int] = set()
    current: BaseException | None = error
    texts = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts.append(str(current))
        current = current.__cause__ or current.__context__
    tails = [
        text.rsplit(marker, 1)[1] for text in texts for marker in ("Found from", "from user code:") if marker in text
    ]
    found = next((w for w in (innermost_user_line(text, path) for text in [*tails, *texts]) if w), None)
    return found[1] if found else None


def _failed(error: Exception, path: str, lines: list[str], class_span: Span, started: float) -> LevelResult:
    diagnostic = classify(error, path, lines, "trace", LEVEL, class_span)
    diagnostic.level = LEVEL
    named = _line_torch_names(error, path)
    if named is not None and diagnostic.line == class_span.line:
        whole_line(named, lines).copy_to(diagnostic)
    return LevelResult(LEVEL, False, diagnostics=[diagnostic], seconds=time.perf_counter() - started)


def _note(nodes: list, graphs: int, where: str) -> str:
    parts = [
        f"forward kernels for {where}, as torch.compile(m)(x) makes them at the example size; inductor's "
        "code was generated, not built or run"
    ]
    if graphs > 1:
        parts.append(f"{graphs} compiled graphs: graph breaks split the forward (see the dynamo level)")
    unplaced = [n.name for n in nodes if not n.kernel["lines"]]
    if unplaced:
        parts.append(f"no line of this file for {', '.join(unplaced[:5])}" + (" …" if len(unplaced) > 5 else ""))
    return "; ".join(parts)


def run(
    example: Any,
    path: str,
    lines: list[str],
    class_span: Span,
    fx: LevelResult | None = None,
    deadline: float | None = None,
) -> LevelResult:
    """`fx`: the class's fx level, which says whether the forward reads values (dynamo.reads_values);
    `deadline`: time.monotonic() at which the worker stops the trace (the compile stops a little before)."""
    from fxlens.worker.levels.inductor_capture import CompileTimeout, compile_graphs, compiler_problem

    started = time.perf_counter()
    if example.inputs is None:
        return LevelResult(LEVEL, False, note="no example inputs: torch.compile compiles the forward for them")
    target = device()
    if target == "cpu":
        problem = compiler_problem()
        if problem is not None:
            return LevelResult(
                LEVEL,
                False,
                diagnostics=[_compiler_diagnostic(problem, class_span)],
                seconds=time.perf_counter() - started,
            )
    start = "cpu" if reads_values(fx) and devices.fits_on_cpu(example.instance) else "fake"
    try:
        with inductor_cache.private(torch.__version__) as folder, inductor_cache.remembered_probes(folder):
            cache = inductor_cache.CompiledCache(folder)

            def step(module: torch.nn.Module, inputs: tuple[tuple, dict]) -> Any:
                args, kwargs = inputs
                return compile_graphs(module, args, kwargs, deadline=deadline, cache=cache)

            ran = devices.run(
                step,
                example.instance,
                (example.inputs, example.kwargs),
                start,
                getattr(example, "rebuild", None),
                kinds=KINDS,
                options=devices.RunOptions(fake_device=target),
            )
    except CompileTimeout:
        return _timeout(class_span, started)
    except Exception as error:  # noqa: BLE001  the user's code or inductor failing: the level's diagnostic
        return _failed(error, path, lines, class_span, started)
    if ran.reason or ran.tensors == "cpu":  # (fake tensors are this level's choice, not a limit of the meta device)
        devices.note(example.build, ran)
    compiled = ran.value
    if not compiled:
        return LevelResult(
            LEVEL,
            True,
            note="torch.compile compiled no graph: the forward runs no tensor op it captures",
            seconds=time.perf_counter() - started,
            graphs=0,
        )
    where = "a GPU (Triton)" if ran.tensors == "fake" and target == "cuda" else "the CPU (C++)"
    nodes, code = map_kernels(compiled, lambda trace: innermost_user_line(trace, path), lines)
    return LevelResult(
        LEVEL,
        True,
        nodes,
        [],
        code,
        time.perf_counter() - started,
        note=_note(nodes, len(compiled), where),
        graphs=len(compiled),
    )

"""What each failure real code hits means, and the fix that works for it (each fix is applied and traced
in tests/worker/failures/test_failures_real.py).

A rule's texts are `str.format` templates over `Failure.fields()`. Rules are checked in order; the first
that matches wins, so library-specific rules come before the rules about the user's own constructs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from fxlens.worker.failures.limits import MAX_CPU_ELEMENTS

# a size read off a traced tensor: `x.shape[1]`, `x.size(0)`, `x.ndim`, `len(x)`
SHAPE_READ = re.compile(r"\.shape\b|\.size\(|\.ndim\b|\.dim\(\)|\blen\(")
_LOOP = re.compile(r"^\s*(for|while)\b|\brange\(")
_NUMBER_CALL = re.compile(r"\b(int|float|round|bool|complex|math\.\w+)\(")
_FACTORY = re.compile(
    r"(\w+)\(\) (takes 1 positional argument but \d+ were given|"
    r"received an invalid combination of arguments - got \(Proxy)"
)
_LIKE = {
    "zeros": "x.new_zeros(x.shape[0], 1)",
    "ones": "x.new_ones(x.shape[0], 1)",
    "empty": "x.new_empty(x.shape[0], 1)",
    "randn": "torch.randn_like(x)",
    "rand": "torch.rand_like(x)",
}


@dataclass
class Failure:
    """What classify knows about one exception."""

    text: str  # "<ExceptionType>: <message>"
    level: str | None
    stage: str
    source: str  # the innermost line of the user's file, stripped ("" when no frame was there)
    # the innermost frame outside the user's file and outside torch's tracing machinery, if any
    library: str | None = None  # "einops", "torch.distributions", "transformers", "torch.nn", ...
    library_where: str = ""  # "transformers/models/llama/modeling_llama.py:242 in forward"
    library_function: str = ""  # the first function entered in that library ("rearrange")
    library_class: str = ""  # the class of `self` there ("Rearrange")
    proxy_involved: bool = False  # a torch.fx Proxy met code that needs a real value
    methods: list[str] = field(default_factory=list)  # the traced class's own methods (for no-forward)
    surface: str = "editor"  # where the fix is read: "editor" or "cli" (see WHERE)

    def has(self, *needles: str) -> bool:
        return any(n in self.text for n in needles)

    def fields(self) -> dict[str, str]:
        factory = _FACTORY.search(self.text)
        fn = factory.group(1) if factory else "zeros"
        method = next((m for m in self.methods if not m.startswith("_")), "compute")
        einops_fn = (
            self.library_class.lower()
            if self.library_class in ("Rearrange", "Reduce")
            else self.library_function or "rearrange"
        )
        return {
            "fn": fn,
            "like": _LIKE.get(fn, f"x.new_{fn}(...)"),
            "method": method,
            "where": self.library_where,
            "library": self.library or "library",
            "einops_fn": einops_fn,
            "layer": self.library_class or "layer",
        }


@dataclass(frozen=True)
class Rule:
    category: str
    matches: Callable[[Failure], bool]
    explanation: str
    fix: str


def _shape_decided(f: Failure) -> bool:
    return bool(SHAPE_READ.search(f.source))


_ATEN_TRACES_IT = " The aten level traces this line as it is."

RULES: tuple[Rule, ...] = (
    # fxlens's own limit (worker/levels/devices.py), not the user's bug: first, whatever the message resembles
    Rule(
        "meta-device",
        lambda f: f.text.startswith("MetaDeviceLimit:"),
        "fxlens builds modules without weights (on the meta device); this code needs tensor values, and the "
        "module is too large for fxlens to run it on real CPU tensors.",
        "Pin a smaller configuration in a directive above the class, e.g. "
        "`# fxlens: Model(dim=64, depth=2)(torch.randn(2, 64))`, so that it fits in "
        f"{MAX_CPU_ELEMENTS // 1_000_000} M parameter elements.",
    ),
    Rule(
        "no-forward",
        lambda f: f.has('is missing the required "forward" function'),
        "The class defines no `forward` of its own (its methods are called by name), and nn.Module's default "
        "`forward` only raises: there is nothing to trace, at any level.",
        "Define `forward` to run what you want to see, e.g. `def forward(self, x): return self.{method}(x)`, "
        "or trace the subclass or wrapper module that defines it.",
    ),
    Rule(
        "unsupported-type",
        lambda f: f.level == "aten"
        and f.has(
            "which is not a known type",
            "Unsupported input type",
            "register a pytree",
            "pytree containers of basic types",
        ),
        "torch.export passes only tensors, numbers and containers it knows (tuples, lists, dicts, registered "
        "dataclasses) into and out of the graph; this value is an object of another class (a cache such as "
        "HuggingFace's `DynamicCache`, a custom output type).",
        "For HuggingFace models call them with `use_cache=False` (in the directive, e.g. "
        "`# fxlens: Model(config)(ids, use_cache=False)`; for a class traced inside its parent, in the "
        "parent's directive). For your own types, register them: `torch.export.register_dataclass(MyOutput)` "
        "or `torch.utils._pytree.register_pytree_node`.",
    ),
    Rule(
        "decorated-forward",
        lambda f: f.has("co_varnames is too small"),
        "A decorator on `forward` (like HuggingFace's `@deprecate_kwarg`, `@can_return_tuple`, "
        "`@check_model_inputs`) replaced its code with a `(*args, **kwargs)` wrapper while its signature "
        "still shows the original parameters; symbolic_trace builds the graph's inputs from both, and they "
        "disagree.",
        "Use the aten level: torch.export calls `forward` as Python does and traces this class (give it "
        "inputs with a `# fxlens:` directive if fxlens found none). fx cannot trace a root `forward` "
        "wrapped like this.",
    ),
    Rule(
        "einops-on-proxy",
        lambda f: f.library == "einops" and f.library_class in ("Rearrange", "Reduce"),
        "einops' `{layer}` layer looks up its recipe by the input's number of dims, which under symbolic "
        "tracing is a graph value (a Proxy), not a number.",
        "Call the function instead of the layer, in `forward`: `x = {einops_fn}(x, '<same pattern>', ...)` "
        "with `from einops import {einops_fn}` and `torch.fx.wrap('{einops_fn}')` at module level (the graph "
        "gets one `{einops_fn}` node)." + _ATEN_TRACES_IT,
    ),
    Rule(
        "einops-on-proxy",
        lambda f: f.library == "einops",
        "einops picks a backend from the tensor's type, and under symbolic tracing the tensor is a torch.fx "
        "Proxy, a type einops does not know.",
        "Make the einops call one graph node: `torch.fx.wrap('{einops_fn}')` at module level, after "
        "`from einops import {einops_fn}`, and call it by that name (not as `einops.{einops_fn}`)." + _ATEN_TRACES_IT,
    ),
    Rule(
        "distribution-on-proxy",
        lambda f: f.library == "torch.distributions" and f.level == "aten",
        "`torch.distributions` checks its arguments' values (`validate_args`) with a Python `if` on a tensor, "
        "which export cannot decide while tracing.",
        "Pass `validate_args=False` to the distribution: `{layer}(..., validate_args=False)`.",
    ),
    Rule(
        "distribution-on-proxy",
        lambda f: f.library == "torch.distributions",
        "`torch.distributions` checks its arguments with Python `if`s and reads sizes as numbers while it is "
        "built, neither of which symbolic tracing can follow.",
        "Build and use the distribution in a helper function registered with `torch.fx.wrap` at module level "
        "(it becomes one graph node), with `validate_args=False`, e.g. `def policy_outputs(logits): "
        "d = {layer}(..., validate_args=False); return d.mean, d.entropy()`. The aten level "
        "traces the distribution itself once it has `validate_args=False`.",
    ),
    Rule(
        "library-internal",
        lambda f: f.library is not None and f.level == "fx" and f.proxy_involved,
        "Tracing failed inside {library} code ({where}) called from this line: that code needs a real value "
        "where symbolic tracing gives it a graph value (a Proxy).",
        "Trace at the aten level, which runs it on real sizes, or, with a tracer of your own, make that "
        "module a leaf (`Tracer.is_leaf_module`).",
    ),
    Rule(
        "library-internal",
        lambda f: f.library is not None and f.level == "fx",
        "Tracing failed inside {library} code ({where}) called from this line, for a reason that does not "
        "come from tracing: running the module would fail the same way.",
        "Check what this line passes to it (arguments, configuration); the message is {library}'s own.",
    ),
    Rule(
        "data-dependent-control-flow",
        lambda f: (
            f.has("symbolically traced variables cannot be used as inputs to control flow")
            and f.source.startswith("assert")
            and _shape_decided(f)
        ),
        "An `assert` turns a traced size into a Python bool, which symbolic tracing cannot do: the size is a "
        "graph value while the graph is recorded.",
        "Use `torch._assert(cond, msg)` (traced as a graph node) or check the shape outside `forward`. The "
        "aten level traces it, specialised to the example sizes.",
    ),
    Rule(
        "data-dependent-control-flow",
        lambda f: (
            f.has("symbolically traced variables cannot be used as inputs to control flow")
            and f.source.startswith("assert")
        ),
        "An `assert` turns a traced value into a Python bool, which tracing cannot do: the value is not known "
        "while the graph is recorded.",
        "Use `torch._assert(cond, msg)`, which is traced as a graph node, or check the value outside `forward`.",
    ),
    Rule(
        "data-dependent-control-flow",
        lambda f: (
            f.has("symbolically traced variables cannot be used as inputs to control flow") and _shape_decided(f)
        ),
        "Python decides this branch from a size (`x.shape[...]`), which under symbolic tracing is a graph value, "
        "not a number, so fx cannot pick a side.",
        "Decide from a size known at construction (store it in `__init__`), or pass the deciding argument as a "
        "constant via `concrete_args`. The aten level traces it, specialised to the example sizes.",
    ),
    Rule(
        "data-dependent-control-flow",
        lambda f: f.has(
            "symbolically traced variables cannot be used as inputs to control flow",
            "GuardOnDataDependentSymNode",
            "Data-dependent branching",
            "data dependent",
            "Could not guard on data-dependent",
        ),
        "Python decides this branch from a tensor's value (or a size torch cannot know while tracing); "
        "a graph records operations, not decisions, so there is no single graph for both outcomes.",
        "Compute both sides and select with `torch.where(cond, a, b)`, use `torch.cond(pred, true_fn, false_fn, "
        "operands)`, or pass the deciding argument as a constant via `concrete_args`.",
    ),
    Rule(
        "write-through-view",
        lambda f: f.has("object does not support item assignment") and f.proxy_involved,
        "An assignment into part of a traced tensor (`x[:, 0] = 0`) writes through a view of it; torch.fx's "
        "Proxy has no item assignment, so symbolic_trace cannot record it (and a pass could not see the "
        "write if it did).",
        "Build the new value instead: `x = x.index_fill(1, torch.tensor([0]), 0)`, `x = torch.where(mask, 0, x)` "
        "or `x = x.masked_fill(mask, 0)`, or `torch.cat` of the parts." + _ATEN_TRACES_IT,
    ),
    Rule(
        "map-over-proxy",
        lambda f: f.has("Proxy object cannot be iterated", "'Proxy' object is not iterable"),
        "While tracing, a tuple that an op returns (`x.chunk(3)`) is one graph value whose length Python does "
        "not know, so `map`, a comprehension or a `for` loop cannot iterate it; only unpacking it into a fixed "
        "number of names (`q, k, v = qkv`) works.",
        "Unpack into names first, then iterate the tuple of names: `q, k, v = qkv` and then "
        "`q, k, v = map(fn, (q, k, v))`." + _ATEN_TRACES_IT,
    ),
    Rule(
        "proxy-iteration",
        lambda f: f.has("object cannot be interpreted as an integer") and bool(_LOOP.search(f.source)),
        "A loop or `range()` needs a real integer, but under symbolic tracing sizes such as `x.shape[0]` are "
        "graph values (Proxies), not numbers.",
        "Iterate over a size known at construction time (store it in `__init__`), or move the loop into a "
        "function registered with `torch.fx.wrap`. The aten level unrolls the loop for the example size.",
    ),
    Rule(
        "factory-with-traced-size",
        lambda f: bool(_FACTORY.search(f.text)),
        "A tensor factory given its sizes as separate arguments (`torch.{fn}(x.shape[0], 1)`) cannot take a "
        "traced size first: under symbolic tracing `x.shape[0]` is a Proxy, and torch's argument parser then "
        "rejects the call.",
        "Pass the sizes as one tuple, `torch.{fn}((x.shape[0], 1), device=x.device)`, or use `{like}`, which "
        "takes dtype and device from `x`.",
    ),
    Rule(
        "factory-with-traced-size",
        lambda f: f.has("`__cuda_array_interface__` must be a dict") and "tensor(" in f.source,
        "`torch.tensor` reads its data while tracing, and a traced size (`x.shape[1]`) is a graph value "
        "(a Proxy), not data.",
        "Make the tensor with a traced op: `torch.scalar_tensor(x.shape[1], dtype=torch.float32)`." + _ATEN_TRACES_IT,
    ),
    Rule(
        "proxy-as-dtype",
        lambda f: f.has("torch.finfo() requires a floating point", "torch.iinfo() requires an integer"),
        "`torch.finfo(x.dtype)` needs a real dtype, but under symbolic tracing `x.dtype` of a traced tensor is "
        "a graph value (a Proxy), so `finfo` sees no floating point type.",
        "Register the function that reads the dtype with `torch.fx.wrap('<function name>')` at module level "
        "(fx then records it as one call), or take the dtype from a parameter (`self.weight.dtype`)." + _ATEN_TRACES_IT,
    ),
    Rule(
        "proxy-as-number",
        lambda f: (
            f.has("not 'Proxy'", "Proxy doesn't define", "object cannot be interpreted as an integer")
            and bool(_NUMBER_CALL.search(f.source))
        ),
        "`int()`, `float()` and `round()` need a Python number, but under symbolic tracing a size such as "
        "`x.shape[1]` is a graph value (a Proxy), and so is anything computed from it (`n ** 0.5`).",
        "Keep it a traced value where one will do (`scale = q.shape[-1] ** -0.5` multiplies a tensor as well), "
        "compute the number from constructor arguments in `__init__` (e.g. `self.grid = image_size // "
        "patch_size`), or move the arithmetic into a function registered with `torch.fx.wrap` at module level."
        + _ATEN_TRACES_IT,
    ),
    Rule(
        "proxy-as-integer",
        lambda f: f.has(
            "slice indices must be integers",
            "have an __index__ method",
            "must be int, not Proxy",
            "object cannot be interpreted as an integer",
        ),
        "A plain tensor or Python code needs a real integer here (e.g. slicing a buffer), but the size "
        "comes from a traced tensor, so while tracing it is a graph value (a Proxy), not a number.",
        "Use a traced op instead, e.g. `torch.narrow(self.buf, 0, 0, n)` for `self.buf[:n]`, or move the "
        "code into a function registered with `torch.fx.wrap`.",
    ),
    Rule(
        "builtin-on-proxy",
        lambda f: f.has("'len' is not supported in symbolic tracing", "is not supported in symbolic tracing"),
        "A Python builtin like `len()` cannot look inside a graph value while tracing.",
        "Use `x.shape[0]` / `x.size(0)` instead of `len(x)`, or call `torch.fx.wrap('len')` at module level.",
    ),
    Rule(
        "item/numpy",
        lambda f: f.has("__array_struct__", "__array__", "numpy", ".item()", "tolist"),
        "The value leaves the graph (to NumPy or a Python number), which tracing cannot follow.",
        "Keep the computation in torch ops, or move it into a function registered with `torch.fx.wrap`.",
    ),
    Rule(
        "memory",
        lambda f: f.has("MemoryError", "Cannot allocate memory", "DefaultCPUAllocator: can't allocate"),
        "The code tried to allocate more memory than the trace limit allows.",
        "Build weights on the meta device (fxlens does) and avoid large real tensors at module level; "
        "raise `fxlens.memoryLimitMB` if the allocation is intended.",
    ),
)


# how a reader puts a fix into effect, in the words of where they read it: the editor's folders and settings,
# the CLI's current directory and flags
WHERE = {
    "editor": {
        "roots": "the workspace folders and their `src/`",
        "from_root": "open your project's root folder in the editor",
        "python": "the `fxlens.python` setting",
    },
    "cli": {
        "roots": "the current directory and its `src/`",
        "from_root": "run fxlens from your project's root",
        "python": "`--python`",
    },
}


def fallback(f: Failure) -> tuple[str, str, str]:
    """(category, explanation, fix) when no rule knows the error: say what raised and where."""
    inside = f" inside {f.library} code ({f.library_where})" if f.library else ""
    if f.stage == "construction":
        return (
            "construction",
            f"Building the module raised {f.text.split(':')[0]}{inside}.",
            "Add a `# fxlens: MyModule(args)(example_inputs)` comment above the class.",
        )
    if f.stage == "inputs":
        return (
            "inputs",
            f"Calling the module on its example inputs raised {f.text.split(':')[0]}{inside}.",
            "Add a `# fxlens: MyModule(args)(torch.randn(...))` comment above the class with inputs this "
            "forward accepts.",
        )
    if f.stage == "load" and f.has("ModuleNotFoundError", "ImportError"):
        words = WHERE.get(f.surface, WHERE["editor"])
        return (
            "load",
            f"Importing what the file needs raised {f.text.split(':')[0]}{inside}.",
            f"fxlens imports your file as Python would from {words['roots']}: "
            f"{words['from_root']}, or install the missing package in the interpreter fxlens uses "
            f"({words['python']}).",
        )
    if f.stage == "load":
        return (
            "load",
            f"Running the file's definitions raised {f.text.split(':')[0]}{inside}.",
            "Fix the error at this line; fxlens runs the file's imports and definitions before tracing.",
        )
    what = {"fx": "symbolic tracing", "aten": "torch.export"}.get(f.level or "", "tracing")
    explanation = f"{what} raised {f.text.split(':')[0]} at this line{inside}."
    if f.level == "fx" and f.proxy_involved:
        fix = (
            "This line hands a traced value (a Proxy) to code that needs a real one: keep that part in torch "
            "ops, or move it into a function registered with `torch.fx.wrap` at module level (it becomes one "
            "graph node). The aten level runs it on real sizes."
        )
    elif f.level == "aten":
        fix = (
            "Run the module once on its example inputs outside fxlens: if it raises there too, the inputs do "
            "not fit (give others in a `# fxlens:` directive); if not, the message says what export "
            "could not follow."
        )
    else:
        fix = "Running the module would raise the same: fix this line or the arguments it is given."
    return "trace", explanation, fix

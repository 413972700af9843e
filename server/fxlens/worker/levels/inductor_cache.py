"""The folder inductor writes into while the inductor level compiles: fxlens's own, never a shared one;
and what the level keeps there: the answers of inductor's CPU probes, and the compiles it did.

Inductor writes its caches (the vector-ISA probes it compiles, the wrapper modules it generates, locks)
under `TORCHINDUCTOR_CACHE_DIR`, by default `/tmp/torchinductor_<user>`, a folder every torch.compile of
the machine shares. The level points it (and Triton's cache) at `<fxlens cache>/inductor/torch-<version>`
for the compile and puts the user's setting back afterwards.

Inductor decides how to vectorise CPU kernels by probing the instruction sets (`cpu_vec_isa`): each probe
compiles a tiny program with the set's flags (cached in the folder) and loads it in a fresh Python process,
six processes per compile here, 2.7 to 4 s of every trace child's first compile. `remembered_probes` keeps
each probe's answer in `probes.json`, keyed by everything the answer depends on (torch, the compiler binary,
the CPU, the flags, the program): a later child asks torch's own logic the same questions and gets the same
answers without the processes.

`CompiledCache` keeps what one compile of a captured graph gave (kernel_map.Compiled: the code, inductor's
provenance, the post-grad graph), keyed by everything that decides it: the graph dynamo captured (its code,
its nodes' stack traces, the attributes it reads), the example inputs' sizes, strides, dtypes, devices and
`requires_grad`, inductor's and aot_autograd's configuration, torch, the compiler and the CPU. A later trace
of the same code (another child, a restart, `fxlens check` again) reads it instead of compiling: what
inductor's FX graph cache does for torch.compile, which the level cannot use (a cache hit skips the
compile, and with it the provenance).

Bounded: the wrappers the level reads are deleted once read (inductor_capture.py); what stays is what a
next compile reuses (the ISA probes, a few hundred KB, and the compiles). A folder grown past MAX_BYTES anyway
(a torch that writes more than this one does) is emptied before the next compile, and folders of other torch versions
are removed once KEEP_VERSIONS newer ones exist; at most MAX_COMPILED compiles, MAX_COMPILED_BYTES of
them, are kept (the least recently used go first).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fxlens.cache_dirs import user_cache_dir

# the folder's own setting (tests point it at a temporary folder); else the user cache folder's fxlens/inductor
ENV = "FXLENS_INDUCTOR_CACHE_DIR"
MAX_BYTES = 256 << 20
KEEP_VERSIONS = 2
MAX_COMPILED = 256
MAX_COMPILED_BYTES = MAX_BYTES // 2  # (a 12-layer GPT-2's compile, 98 kernels: 0.9 MB)
_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def root() -> str:
    return user_cache_dir("inductor", ENV)


def folder(torch_version: str) -> str:
    """This torch build's folder (its probes and generated code are its own)."""
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in torch_version)
    return os.path.join(root(), f"torch-{safe}")


def size_of(path: str) -> int:
    total = 0
    for parent, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except OSError:
                pass
    return total


def bound(path: str) -> None:
    """Keep the private folders within their bounds (see the module's docstring)."""
    if os.path.isdir(path) and size_of(path) > MAX_BYTES:
        shutil.rmtree(path, ignore_errors=True)
    parent = os.path.dirname(path)
    try:
        others = [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith("torch-")]
    except OSError:
        return
    others = sorted(
        (p for p in others if os.path.abspath(p) != os.path.abspath(path)),
        key=lambda p: os.path.getmtime(p),
        reverse=True,
    )
    for stale in others[KEEP_VERSIONS - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)


@contextmanager
def private(torch_version: str) -> Iterator[str]:
    """Inductor's and Triton's caches in fxlens's folder for the duration; the folder."""
    path = folder(torch_version)
    bound(path)
    os.makedirs(path, exist_ok=True)
    os.utime(path)  # (the most recently used version is the one kept)
    before = {name: os.environ.get(name) for name in _VARIABLES}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    os.environ["TRITON_CACHE_DIR"] = os.path.join(path, "triton")
    try:
        yield path
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


PROBES = "probes.json"


def _compiler_identity() -> str:
    """The C++ compiler inductor would run, as a file: its path, size and time (a new compiler, a new key)."""
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        compiler = get_cpp_compiler()
    except Exception as error:  # noqa: BLE001  (no compiler: the probes fail, and that is remembered under this key)
        return f"none: {error}"
    found = shutil.which(compiler) or compiler
    try:
        stat = os.stat(found)
    except OSError:
        return found
    return f"{os.path.realpath(found)}:{stat.st_size}:{int(stat.st_mtime)}"


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            return next((line for line in info if line.startswith(("flags", "Features"))), "")
    except OSError:
        return platform.processor()


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(path: str, answers: dict) -> None:
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".probes-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(answers, out)
        os.replace(temporary, path)  # (two children writing at once: one whole file wins)
    except OSError:
        if os.path.exists(temporary):
            os.unlink(temporary)


def machine() -> str:
    """What a probe's answer and a compile depend on beyond the code: torch, the compiler, the CPU."""
    import torch

    return "\n".join([torch.__version__, platform.machine(), _compiler_identity(), _cpu_flags()])


@contextmanager
def remembered_probes(path: str) -> Iterator[None]:
    """Inductor's ISA probes (`VecISA.check_build`) answered from `path/probes.json` where asked before."""
    from torch._inductor import cpu_vec_isa

    file = os.path.join(path, PROBES)
    here = machine()
    probe: Callable[[Any, str], bool] = cpu_vec_isa.VecISA.check_build

    def check_build(isa: Any, code: str) -> bool:
        key = hashlib.sha256("\n".join([here, type(isa).__name__, isa.build_arch_flags(), code]).encode()).hexdigest()
        answers = _read(file)
        if isinstance(answers.get(key), bool):
            return answers[key]
        answer = bool(probe(isa, code))
        _write(file, {**_read(file), key: answer})
        return answer

    # inductor's method patched for the while (and put back): mypy calls any assignment to a method an error
    cpu_vec_isa.VecISA.check_build = check_build  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        cpu_vec_isa.VecISA.check_build = probe  # type: ignore[method-assign, assignment]


COMPILED = "compiled"
FORMAT = "1"  # (kernel_map.Compiled's fields: a new one, a new key)


def _value_text(value: Any) -> str:
    """A graph input's or attribute's part of the key: a tensor's metadata (its values decide no code)."""
    import torch

    if isinstance(value, torch.Tensor):
        return (
            f"Tensor{tuple(value.shape)}{tuple(value.stride())}{value.dtype}{value.device.type}"
            f"{value.requires_grad}{type(value).__name__ == 'Parameter'}"
        )
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_value_text(v) for v in value) + ")"
    return f"{type(value).__name__}:{value!r}"


def compiled_key(gm: Any, example_inputs: list, here: str) -> str:
    """The key of one compile of dynamo's graph `gm` on `example_inputs` (see the module's docstring). Called
    inside the compile's configuration (inductor_capture._capturing): the configuration hashed is that one."""
    from torch._functorch import config as functorch_config
    from torch._inductor import config

    parts = [FORMAT, here, gm.code]
    for node in gm.graph.nodes:
        parts.append(f"{node.name}|{node.meta.get('stack_trace') or ''}")
        if node.op == "get_attr":
            target = gm
            for name in str(node.target).split("."):
                target = getattr(target, name, None)
            parts.append(_value_text(target))
    parts += [_value_text(x) for x in example_inputs]
    parts += [
        repr(sorted(config.save_config_portable().items())),
        repr(sorted(functorch_config.save_config_portable().items())),
    ]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()


class CompiledCache:
    """`path/compiled/<key>.json`: kernel_map.Compiled of compiles done before."""

    def __init__(self, path: str) -> None:
        self.folder = os.path.join(path, COMPILED)
        self.machine = machine()

    def get(self, key: str) -> Any | None:
        from fxlens.worker.levels.kernel_map import Compiled

        file = os.path.join(self.folder, f"{key}.json")
        data = _read(file)
        try:
            found = Compiled(**data) if data else None
        except TypeError:  # (written by another fxlens: not this format)
            return None
        if found is not None:
            try:
                os.utime(file)  # (recently used: evicted last)
            except OSError:
                pass
        return found

    def put(self, key: str, compiled: Any) -> None:
        os.makedirs(self.folder, exist_ok=True)
        _write(
            os.path.join(self.folder, f"{key}.json"),
            {f.name: getattr(compiled, f.name) for f in dataclasses.fields(compiled)},
        )
        try:
            entries = sorted(
                (
                    (os.stat(p), p)
                    for p in (os.path.join(self.folder, n) for n in os.listdir(self.folder))
                    if p.endswith(".json")
                ),
                key=lambda e: e[0].st_mtime,
                reverse=True,
            )
        except OSError:
            return
        total = 0
        for index, (stat, entry) in enumerate(entries):  # the most recently used first: the rest go
            total += stat.st_size
            if index >= MAX_COMPILED or total > MAX_COMPILED_BYTES:
                try:
                    os.remove(entry)
                except OSError:
                    pass

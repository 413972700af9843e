"""The folder inductor writes into while the inductor level compiles: fxlens's own, never a shared one.

Inductor writes its caches (the vector-ISA probes it compiles, the wrapper modules it generates, locks)
under `TORCHINDUCTOR_CACHE_DIR`, by default `/tmp/torchinductor_<user>`, a folder every torch.compile of
the machine shares. The level points it (and Triton's cache) at `<fxlens cache>/inductor/torch-<version>`
for the compile and puts the user's setting back afterwards.

Bounded: the wrappers the level reads are deleted once read (inductor_capture.py); what stays is what a
next compile reuses (the ISA probes, a few hundred KB). A folder grown past MAX_BYTES anyway (a torch that
writes more than this one does) is emptied before the next compile, and folders of other torch versions
are removed once KEEP_VERSIONS newer ones exist.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Iterator

# the folder's own setting (tests point it at a temporary folder); else the user cache folder's fxlens/inductor
ENV = "FXLENS_INDUCTOR_CACHE_DIR"
MAX_BYTES = 256 << 20
KEEP_VERSIONS = 2
_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def root() -> str:
    if os.environ.get(ENV):
        return os.environ[ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fxlens", "inductor")


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
    others = sorted((p for p in others if os.path.abspath(p) != os.path.abspath(path)),
                    key=lambda p: os.path.getmtime(p), reverse=True)
    for stale in others[KEEP_VERSIONS - 1:]:
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

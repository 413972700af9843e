"""The worker's start: check the interpreter's torch, warm it up, shield the worker, then serve.

Messages are JSON lines: requests on stdin, events on the original stdout (which user code can no
longer reach: fd 1 is pointed at stderr before anything else runs).
"""

from __future__ import annotations

import gc
import os
import signal
import sys

from fxlens import messages
from fxlens.worker.process import isolation, shield
from fxlens.worker.process.warm import Worker

MIN_TORCH = (2, 2)


def _torch_problem() -> messages.Fatal | None:
    """Why this interpreter cannot run fxlens's worker (a `fatal` event), or None when it can.

    The version is checked before anything else of torch is imported: an old torch fails those
    imports, and "cannot import torch.export" would hide the real fix (upgrade)."""
    here = sys.executable
    try:
        import torch
    except BaseException as error:  # noqa: BLE001  a broken install can raise anything, even SystemExit
        return messages.Fatal(
            f"torch cannot be imported by {here}: {type(error).__name__}: {error}",
            f"Install it (`{here} -m pip install torch`) or set fxlens.python to an interpreter that has it.",
        )
    version = str(getattr(torch, "__version__", "unknown"))
    parts = version.split("+")[0].split(".")[:2]
    major_minor = tuple(int(p) for p in parts if p.isdigit())
    if len(major_minor) < 2 or major_minor < MIN_TORCH:
        return messages.Fatal(
            f"torch {version} in {here} is too old for fxlens (it needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]})",
            f"Upgrade it: `{here} -m pip install -U torch`, or set fxlens.python to an interpreter with a newer torch.",
        )
    try:
        import torch.export
        import torch.fx
        from torch._subclasses import fake_tensor  # noqa: F401
        from torch.fx.experimental import symbolic_shapes  # noqa: F401

        from fxlens.worker.analysis import analyse  # noqa: F401

        _warm_up(torch)
    except BaseException as error:  # noqa: BLE001
        return messages.Fatal(
            f"torch {version} in {here} does not work for fxlens: {type(error).__name__}: {error}",
            f"Reinstall it: `{here} -m pip install --force-reinstall torch`.",
        )
    return None


def _warm_up(torch) -> None:
    """Pay torch.export's first-call cost once here, so every forked child starts warm."""
    with torch.device("meta"):
        probe = torch.nn.Linear(2, 2)
        example = (torch.randn(2, 2),)
    torch.fx.symbolic_trace(probe)
    torch.export.export(probe, example, strict=False)


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr, never into the channel
    sys.stdout = sys.stderr
    # when the server dies, SIGTERM (not SIGKILL): once shielded, the worker does not die of it but reads
    # the end of its stdin and stops like at a shutdown, ending every trace and all they started first
    isolation.die_with_parent(signal.SIGTERM)

    def write(line: str) -> None:
        try:
            channel.write(line)
        except OSError:
            pass  # the server is gone: its end of stdin closes too, and the worker stops

    def send(event: messages.Event) -> None:
        write(messages.encode(event))

    problem = _torch_problem()
    if problem is not None:
        send(problem)
        return 3
    import torch

    # what torch and the warm-up made is never freed: keep it out of every collection, in the worker and
    # in each trace child (a 70B-shaped trace spent ~1 s in the collector walking it)
    gc.freeze()
    # every process a trace leaves behind is reparented here (not to init), to be killed and reaped
    isolation.adopt_orphans()
    send(messages.Ready(os.getpid(), sys.executable, sys.version.split()[0], torch.__version__))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # from here on no trace can end the worker with a signal; each child restores this mask
    mask = shield.shield_worker()
    Worker(send, write, channel.fileno(), mask).serve()
    try:
        channel.flush()
    except OSError:
        pass
    # Tearing down an interpreter that imported torch takes seconds (module finalizers); nothing
    # is left to clean up (children reaped, stack dumps unlinked), so leave at once
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

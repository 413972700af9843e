"""Linux process attributes through prctl: the name `ps` shows, dying with the parent, adopting orphans."""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

from fxlens import orphans

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def name_process(name: str) -> None:
    """What `ps` and `top` show for this process (Linux, 15 bytes at most)."""
    orphans.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


def prctl_death_signal(number: int = signal.SIGKILL) -> bool:
    """Linux: the signal `number` (SIGKILL) when the parent dies."""
    return orphans.prctl(_PR_SET_PDEATHSIG, number)


def death_signal_setter(number: int = signal.SIGKILL) -> Callable[[], bool]:
    """`prctl_death_signal(number)` with libc bound now: for a fork handler that runs after user code
    (which may have patched `ctypes`)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda: False
    return lambda: prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0) == 0


def die_with_parent(number: int = signal.SIGKILL, parent: int = 0) -> None:
    """Linux: get `number` (SIGKILL) when the parent dies, so a killed server leaves no worker behind.

    A parent that died before the signal was asked for sends none: if this process's parent is no longer
    `parent` (default: the one it had when this was called), it exits at once."""
    parent = parent or os.getppid()
    if not prctl_death_signal(number):
        return
    if os.getppid() != parent:
        os._exit(0)


def adopt_orphans() -> bool:
    """Become the parent of every orphaned descendant (Linux subreaper), so none escapes to init."""
    return orphans.adopt()

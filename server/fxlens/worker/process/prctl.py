"""Linux process attributes through prctl: the name `ps` shows, dying with the parent, adopting orphans."""
from __future__ import annotations

import ctypes
import os
import signal
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: Any) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def name_process(name: str) -> None:
    """What `ps` and `top` show for this process (Linux, 15 bytes at most)."""
    _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


def prctl_death_signal() -> bool:
    """Linux: SIGKILL when the parent dies."""
    return _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with_parent() -> None:
    """Linux: get SIGKILL when the parent dies, so a killed server leaves no worker behind."""
    if not prctl_death_signal():
        return
    if os.getppid() == 1:
        os._exit(0)


def adopt_orphans() -> bool:
    """Become the parent of every orphaned descendant (Linux subreaper), so none escapes to init."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)

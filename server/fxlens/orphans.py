"""Processes left behind by a process that died: adopt them (a Linux subreaper), then end them.

A process that sets PR_SET_CHILD_SUBREAPER becomes the parent of every orphan among its descendants
(instead of init): whatever a trace starts, in its own session or not, double-forked or not, stays in
reach of the process that owns the trace. Used at two floors:

- the warm worker, after each trace child ends: everything that trace left is now the worker's child;
- the process that runs the worker (the language server, the command line), after a worker dies (killed
  by a trace's shell, or by the system): the worker's trace children, and what they started, come up to
  it. Every one of them is in a session other than its own (a trace child starts a session of its own and
  no process can join an existing session), while the workers and `git` it starts itself are in its own.

Shared by both sides: stdlib only.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable
from typing import Any, NamedTuple

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
# a bound on the rounds of `end_adopted`, in case something forks as fast as it is killed
MAX_ROUNDS = 100


class Child(NamedTuple):
    pid: int
    group: int
    session: int


def prctl(option: int, value: Any) -> bool:
    """Linux `prctl(option, value)`; False where it fails or there is no libc to ask."""
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def adopt() -> bool:
    """Become the parent of every orphaned descendant (Linux subreaper), so none escapes to init."""
    return prctl(_PR_SET_CHILD_SUBREAPER, 1)


def adopting() -> bool:
    """Whether this process is a subreaper: the kernel's own flag (a fork does not inherit it)."""
    flag = ctypes.c_int(0)
    return prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag)) and flag.value != 0


def children(parent: int) -> list[Child]:
    """Every live or zombie child of `parent`, from /proc."""
    found: list[Child] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it went away
        if int(fields[1]) == parent:
            found.append(Child(int(entry), int(fields[2]), int(fields[3])))
    return found


def end_adopted(spare: Callable[[Child], bool]) -> int:
    """Kill and reap every child of this process that `spare` does not keep, with its process group.

    Killing one hands its own children to this process (it is their subreaper), so this repeats until no
    such child is left: waiting for a killed process returns only once its children have come up here.
    Returns how many were ended."""
    me, own_group, ended = os.getpid(), os.getpgrp(), 0
    kept_groups: set[int] = set()
    for _ in range(MAX_ROUNDS):
        found = children(me)
        kept_groups |= {child.pid for child in found if spare(child)}
        doomed = [child for child in found if not spare(child)]
        if not doomed:
            break
        for child in doomed:
            if child.group not in (own_group, *kept_groups):
                _kill(os.killpg, child.group)
            _kill(os.kill, child.pid)
        for child in doomed:
            try:
                os.waitpid(child.pid, 0)
            except ChildProcessError:
                pass
            ended += 1
    return ended


def end_adopted_from_other_sessions() -> int:
    """In the process that runs workers: end every child in a session other than this process's own, i.e.
    what came up from a worker that died (see the module's docstring). Nothing unless `adopt()` ran here."""
    if not adopting():
        return 0
    session = os.getsid(0)
    return end_adopted(lambda child: child.session == session)


def _kill(send: Callable[[int, int], None], target: int) -> None:
    try:
        send(target, signal.SIGKILL)
    except OSError:
        pass

"""No trace can take the worker down with a signal.

Code under trace runs in a child of the worker, and code written for cluster launchers signals its
parent (`os.kill(os.getppid(), signal.SIGTERM)` or `SIGUSR1`). So the worker blocks every signal
whose default action would end or stop it (the child unblocks them before user code runs), and it
only honours a stop request from a process that is not its descendant (the server, or a person at
a terminal). The two signals no process can block (SIGKILL, SIGSTOP) are refused by the child's
audit hook when Python code aims them at fxlens's processes; what gets past that (a `kill -9` from
a shell the code starts) costs the server a restart, and the server's quarantine (engine/quarantine.py)
keeps such a file from doing it again.
"""

from __future__ import annotations

import errno
import os
import signal
import sys

# ending or stopping the process is their default; the faults (SIGSEGV, ...) are the process's own
SHIELDED = frozenset(
    s
    for s in (
        signal.SIGTERM,
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGALRM,
        signal.SIGVTALRM,
        signal.SIGPROF,
        signal.SIGPIPE,
        signal.SIGTSTP,
        signal.SIGTTIN,
        signal.SIGTTOU,
        signal.SIGXCPU,
        signal.SIGXFSZ,
        getattr(signal, "SIGPOLL", signal.SIGIO),
        *range(signal.SIGRTMIN, signal.SIGRTMAX + 1),
    )
)
# a stop request from outside fxlens's own process tree is still a stop request
STOPPING = frozenset((signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT))
_UNBLOCKABLE = (signal.SIGKILL, signal.SIGSTOP)


def shield_worker() -> set:
    """Block the signals a trace could end the worker with; the mask the children restore."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, SHIELDED)


def unshield(previous: set) -> None:
    """In a trace child, before user code: signals behave as they do for the user's own process."""
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def is_descendant(pid: int, ancestor: int) -> bool:
    """Whether `pid` is in `ancestor`'s process tree; a process already gone counts as one (the only
    processes that come and go here are the traces')."""
    seen = 0
    while pid > 1 and seen < 64:
        parent = parent_of(pid)
        if parent == ancestor:
            return True
        if parent == 0:
            return True  # gone
        pid, seen = parent, seen + 1
    return False


def stop_requested() -> bool:
    """Drain the shielded signals pending for the worker: True when one asks it to stop and was not
    sent by a trace (or anything a trace started)."""
    me, stop = os.getpid(), False
    while True:
        try:
            info = signal.sigtimedwait(SHIELDED, 0)
        except (OSError, InterruptedError):
            return stop
        if info is None:
            return stop
        if info.si_signo in STOPPING and not is_descendant(info.si_pid, me):
            stop = True


def refuse_signals_to(worker: int, server: int) -> None:
    """In a trace child: Python code cannot send what would kill or stop fxlens's own processes (the
    worker, its server, their process group, every process at once). Raised at the user's line, so
    the diagnostic is there; a signal the worker blocks (SIGTERM, SIGUSR1, ...) goes through, and the
    code carries on as it would."""
    groups = {g for g in (_group(worker), _group(server)) if g > 0}
    own_group = os.getpgrp()

    def hook(event: str, args: tuple) -> None:
        if event not in ("os.kill", "os.killpg") or len(args) < 2 or args[1] == 0:
            return
        target, number = args[0], args[1]
        if event == "os.kill":
            harmful = (
                target == -1
                or target == server
                or (target < -1 and -target in groups)
                or (target == worker and number in _UNBLOCKABLE)
            )
        else:
            harmful = target in groups and target != own_group
        if harmful:
            raise PermissionError(
                errno.EPERM,
                f"fxlens refused {event}({target}, {_name(number)}): it would stop "
                "fxlens's own processes (the worker is this trace's parent)",
            )

    sys.addaudithook(hook)


def _group(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return 0


def _name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)

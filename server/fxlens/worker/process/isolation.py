"""The disposable child: fork, limits, output redirection, stack dumps, and cleaning up after it.

Everything a trace child does to its process (setsid, limits, patched `os._exit`, signal handlers)
dies with it; the warm worker that forks it is never touched by user code.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass

from fxlens import messages, orphans
from fxlens.worker.process import child
from fxlens.worker.process.child import ABORTED_STATUS, DEFAULT_MEMORY_MB
from fxlens.worker.process.child_location import ChildLocation
from fxlens.worker.process.prctl import adopt_orphans, die_with_parent, name_process

# (kept importable from here: the worker calls them through this module)
__all__ = ["ABORTED_STATUS", "DEFAULT_MEMORY_MB", "adopt_orphans", "die_with_parent", "name_process"]


@dataclass
class Reaped:
    status: int
    max_rss_kb: int  # peak resident size of the child (the kernel's own count), for telling OOM kills apart


@dataclass
class Standby:
    """A trace child forked ahead of need, set up and blocked until the worker hands it one request:
    a trace starts without paying for the fork and the set-up."""

    pid: int
    events_fd: int  # the worker reads the child's events here
    request_fd: int  # the worker writes the one request here
    dump_fd: int  # the child's stack dumps: an unlinked file, so nothing stays on disk whatever dies
    rss_at_fork_kb: int  # the worker's size at the fork, to tell a child's own growth from it
    location: ChildLocation  # where the child is (class, line), readable whatever it did to its descriptors


def _unlinked_file() -> int:
    fd, path = tempfile.mkstemp(prefix="fxlens-stack-")
    os.unlink(path)
    return fd


def fork_standby(private_fds: Iterable[int] = (), recipes: Iterable[dict] = (), mask: set | None = None) -> Standby:
    """Fork a child that sets itself up, warms up on `recipes` (see warm_up.py), waits for a request,
    analyses it and exits.

    `private_fds` are the worker's own descriptors (its channel to the server, other traces' pipes and
    dumps): the child closes them before user code runs, so it can neither forge nor read theirs."""
    dump_fd = _unlinked_file()
    events_read, events_write = os.pipe()
    request_read, request_write = os.pipe()
    rss_kb = worker_rss_kb()
    location, worker_pid = ChildLocation(), os.getpid()
    try:
        pid = os.fork()
    except OSError:
        for fd in (dump_fd, events_read, events_write, request_read, request_write):
            os.close(fd)
        location.close()
        raise
    if pid:
        os.close(events_write)
        os.close(request_read)
        return Standby(pid, events_read, request_write, dump_fd, rss_kb, location)
    mask = set() if mask is None else mask
    # --- in the child: never returns ---
    child.run(
        child.Setup(
            events_write,
            request_read,
            dump_fd,
            (events_read, request_write, *private_fds),
            location,
            worker_pid,
            events_read,
            mask,
        ),
        recipes,
    )


def hand_over(standby: Standby, request: messages.TraceRequest) -> None:
    """Give the standby its request (OSError if it died waiting: BrokenPipeError)."""
    data = memoryview(messages.encode(request).encode())  # (a 5 MB text: no copy per 64 KB written)
    try:
        while data:
            data = data[os.write(standby.request_fd, data) :]
    finally:
        os.close(standby.request_fd)
        standby.request_fd = -1


def discard(standby: Standby) -> None:
    """Stop an unused standby and release everything it held."""
    kill_group(standby.pid)
    reap(standby.pid)
    for fd in (standby.events_fd, standby.request_fd, standby.dump_fd):
        if fd >= 0:
            os.close(fd)
    standby.location.close()


def request_stack_dump(pid: int, dump_fd: int) -> None:
    """Ask a hung child where it is (faulthandler on SIGUSR1) before it is killed."""
    try:
        before = os.fstat(dump_fd).st_size
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return
    # faulthandler writes from its C signal handler: done within microseconds unless the child is
    # stopped or ignores SIGUSR1, hence the bound
    deadline = time.monotonic() + 0.5
    size = before
    while time.monotonic() < deadline:
        time.sleep(0.01)
        now = os.fstat(dump_fd).st_size
        if now > before and now == size:
            return  # it grew and stopped growing
        size = now


def kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


def running(pid: int) -> bool:
    """Whether the child `pid` still runs (not yet dead), without reaping it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def reap(pid: int) -> Reaped:
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return Reaped(0, 0)
    return Reaped(status, usage.ru_maxrss)


def sweep_orphans(keep: set[int]) -> int:
    """Kill and reap every child of this (subreaper) worker except the running trace children (and the
    standby): whatever a finished trace spawned, in its own session or not, is reparented here when its
    parent dies (fxlens/orphans.py). Returns how many were removed."""
    return orphans.end_adopted(lambda child: child.pid in keep)


def worker_rss_kb() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return 0

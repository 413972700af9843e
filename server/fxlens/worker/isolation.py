"""The disposable child: fork, limits, output redirection, stack dumps, and cleaning up after it.

Everything a trace child does to its process (setsid, limits, patched `os._exit`, signal handlers)
dies with it; the warm worker that forks it is never touched by user code.
"""
from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from fxlens.worker import postmortem

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
_CHANNEL_FD = 919  # out of the way of the low fds user code might close or write to
DEFAULT_MEMORY_MB = 4096
# exit status of a child whose user code raised SystemExit/KeyboardInterrupt/... past the analysis
ABORTED_STATUS = 70


@dataclass
class Reaped:
    status: int
    max_rss_kb: int  # peak resident size of the child (the kernel's own count), for telling OOM kills apart


def _prctl(option: int, value: Any) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def name_process(name: str) -> None:
    """What `ps` and `top` show for this process (Linux, 15 bytes at most)."""
    _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


def die_with_parent() -> None:
    """Linux: get SIGKILL when the parent dies, so a killed server leaves no worker behind."""
    if not _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL):
        return
    if os.getppid() == 1:
        os._exit(0)


def adopt_orphans() -> bool:
    """Become the parent of every orphaned descendant (Linux subreaper), so none escapes to init."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit_memory(megabytes: int) -> None:
    """RLIMIT_AS on top of what is already mapped: torch alone maps far more than it uses."""
    if megabytes <= 0:
        return
    limit = _mapped_bytes() + megabytes * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OverflowError):
        pass  # above what the kernel can express (or the hard limit): the system's limit applies


def _report_exits_with_a_stack(dump: Any) -> None:
    """`os._exit(n)` in user code ends the child without a traceback: dump the stack first, so the
    worker can point at the line. Only the child's `os` is patched; it dies with the child."""
    real_exit = os._exit

    def exit_with_stack(status: int) -> None:
        try:
            dump.write("os._exit(%d) called\n" % status)
            dump.flush()
            faulthandler.dump_traceback(file=dump, all_threads=False)
        finally:
            real_exit(status)

    os._exit = exit_with_stack


def _report_self_kills_with_a_stack(dump: Any) -> None:
    """`os.kill(os.getpid(), SIGKILL)` leaves no trace either: note it and the stack (audit hook,
    installed only in the child) before the signal is sent."""
    me, group = os.getpid(), os.getpgrp()

    def hook(event: str, args: tuple) -> None:
        if event not in ("os.kill", "os.killpg") or len(args) < 2:
            return
        target = args[0]
        own = target in (me, 0, -group) if event == "os.kill" else target in (group, 0)
        if own:
            dump.write("%s(own process, %s) called\n" % (event, args[1]))
            dump.flush()
            faulthandler.dump_traceback(file=dump, all_threads=False)

    sys.addaudithook(hook)


def _die_with_trace_child() -> None:
    # a process the user's code forks (os.fork, multiprocessing) dies with the trace child
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Spare:
    """A trace child forked ahead of need, set up and blocked until the worker hands it one request:
    a trace starts without paying for the fork and the set-up."""

    pid: int
    events_fd: int  # the worker reads the child's events here
    request_fd: int  # the worker writes the one request here
    dump_fd: int  # the child's stack dumps: an unlinked file, so nothing stays on disk whatever dies
    rss_at_fork_kb: int  # the worker's size at the fork, to tell a child's own growth from it


def _unlinked_file() -> int:
    fd, path = tempfile.mkstemp(prefix="fxlens-stack-")
    os.unlink(path)
    return fd


def fork_spare(private_fds: Iterable[int] = (), recipes: Iterable[dict] = ()) -> Spare:
    """Fork a child that sets itself up, rehearses `recipes` (see rehearse.py), waits for a request,
    analyses it and exits.

    `private_fds` are the worker's own descriptors (its channel to the server, other traces' pipes and
    dumps): the child closes them before user code runs, so it can neither forge nor read theirs."""
    dump_fd = _unlinked_file()
    events_read, events_write = os.pipe()
    request_read, request_write = os.pipe()
    rss_kb = worker_rss_kb()
    try:
        pid = os.fork()
    except OSError:
        for fd in (dump_fd, events_read, events_write, request_read, request_write):
            os.close(fd)
        raise
    if pid:
        os.close(events_write)
        os.close(request_read)
        return Spare(pid, events_read, request_write, dump_fd, rss_kb)
    # --- in the child: never return from here ---
    real_exit = os._exit
    status = 0
    emit = None
    request: dict = {}
    try:
        for fd in (events_read, request_write, *private_fds):
            if fd >= 0:
                os.close(fd)
        os.setsid()  # its own process group: killing the group takes anything it spawned
        die_with_parent()
        adopt_orphans()  # a double-forked grandchild stays ours while the trace runs
        os.register_at_fork(after_in_child=_die_with_trace_child)
        os.dup2(events_write, _CHANNEL_FD)
        os.close(events_write)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        dump = os.fdopen(dump_fd, "w")
        faulthandler.enable(file=dump, all_threads=False)
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False)
        _report_exits_with_a_stack(dump)
        _report_self_kills_with_a_stack(dump)
        channel = os.fdopen(_CHANNEL_FD, "w", buffering=1)
        name_process("fxlens-spare")

        def emit(event: dict) -> None:
            channel.write(json.dumps(postmortem.refine_event(event)) + "\n")

        from fxlens.worker.analyse import Analysis
        from fxlens.worker.rehearse import rehearse

        rehearse(recipes, request_read)
        with os.fdopen(request_read, "rb") as requests:
            line = requests.readline()
        if not line:
            real_exit(0)  # the worker let this spare go unused (shutting down)
        name_process("fxlens-trace")
        emit({"event": "started"})  # anything that kills this process from now on is the trace's
        request = json.loads(line)
        _limit_memory(int(request.get("memory_mb", DEFAULT_MEMORY_MB)))
        report = Analysis.from_request(request).run(emit)
        emit({"event": "done", "report": postmortem.to_json(report)})
        channel.flush()
    except BaseException as error:  # noqa: BLE001  the user's SystemExit/KeyboardInterrupt end up here too
        status = ABORTED_STATUS
        try:
            if emit is not None and request:
                emit({"event": "aborted", "diagnostic": postmortem.diagnostic_for_abort(error, request)})
        except BaseException:  # noqa: BLE001  e.g. out of memory again: the exit status still tells
            pass
    finally:
        real_exit(status)


def hand_over(spare: Spare, request: dict) -> None:
    """Give the spare its request (OSError if it died waiting: BrokenPipeError)."""
    data = (json.dumps(request) + "\n").encode()
    try:
        while data:
            data = data[os.write(spare.request_fd, data):]
    finally:
        os.close(spare.request_fd)
        spare.request_fd = -1


def discard(spare: Spare) -> None:
    """Stop an unused spare and release everything it held."""
    kill_group(spare.pid)
    reap(spare.pid)
    for fd in (spare.events_fd, spare.request_fd, spare.dump_fd):
        if fd >= 0:
            os.close(fd)


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


def reap(pid: int) -> Reaped:
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return Reaped(0, 0)
    return Reaped(status, usage.ru_maxrss)


def _children_of(parent: int) -> list[tuple[int, int]]:
    """(pid, process group) of every live or zombie child of `parent`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it went away
        if int(fields[1]) == parent:
            found.append((int(entry), int(fields[2])))
    return found


def sweep_orphans(keep: set[int]) -> int:
    """Kill and reap every child of this (subreaper) worker except the running trace children.

    Whatever a finished trace spawned, it is reparented here when its parent dies; killing one may
    orphan its own children, so repeat until none is left. Returns how many were removed."""
    removed = 0
    own_group = os.getpgrp()
    for _ in range(100):  # a bound, in case something forks as fast as we kill
        orphans = [(pid, group) for pid, group in _children_of(os.getpid()) if pid not in keep]
        if not orphans:
            break
        for pid, group in orphans:
            if group != own_group and group not in keep:
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid, _ in orphans:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            removed += 1
    return removed


def worker_rss_kb() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return 0


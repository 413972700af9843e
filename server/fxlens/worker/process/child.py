"""A trace child's life, from the fork to its exit: set up, wait for one request, analyse it, report.

Everything the child needs is bound before user code runs (the channel's encoder, `os._exit`, the
location sampler), so what the code does to its process (patches `json`, closes descriptors, replaces
signal handlers, lowers its limits) can end the trace but not silence or mislead it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import posix
import resource
import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from fxlens import messages
from fxlens.worker.process import postmortem, shield
from fxlens.worker.process.channel import Channel, EventTooLarge
from fxlens.worker.process.child_location import ChildLocation
from fxlens.worker.process.frame_room import with_room
from fxlens.worker.process.prctl import adopt_orphans, death_signal_setter, die_with_parent, name_process

CHANNEL_FD = 919  # out of the way of the low fds user code might close or write to
DEFAULT_MEMORY_MB = 4096
# exit status of a child whose user code raised SystemExit/KeyboardInterrupt/... past the analysis
ABORTED_STATUS = 70
COST_NICENESS = 10  # the class costs, counted after the report, yield the CPU to what shows it


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

    def exit_with_stack(status: int) -> NoReturn:
        try:
            dump.write(f"os._exit({status}) called\n")
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
            dump.write(f"{event}(own process, {args[1]}) called\n")
            dump.flush()
            faulthandler.dump_traceback(file=dump, all_threads=False)

    sys.addaudithook(hook)


def _note_own_limits(location: ChildLocation) -> None:
    """A limit the code sets on its own process (RLIMIT_CPU, RLIMIT_NOFILE) is why it may die."""
    names = {getattr(resource, n): n for n in dir(resource) if n.startswith("RLIMIT_")}

    def hook(event: str, args: tuple) -> None:
        if event == "resource.setrlimit" and len(args) == 2:
            location.note(f"{names.get(args[0], args[0])} set to {args[1]!r}")

    sys.addaudithook(hook)


def _keep_faulthandler(location: ChildLocation) -> None:
    """In the child faulthandler is fxlens's (the user's stderr is /dev/null there): the code's
    `faulthandler.disable()` or `enable(file=...)` would only take away the stack of a crash, so they
    are noted instead of done."""

    def disable() -> None:
        location.note("faulthandler.disable() called")

    def enable(*args: Any, **kwargs: Any) -> None:
        location.note("faulthandler.enable() called")

    faulthandler.disable, faulthandler.enable = disable, enable


def _forks_die_with_their_parent() -> None:
    """A process the user's code forks (os.fork, multiprocessing) dies with the process that forked it.

    The signal is asked for in the new process, after the fork: a parent that died in between (the trace
    child killed as its `done` arrived) sent none, and the new process exits at once instead of living on
    as an orphan. (What this misses, a child that execs through `subprocess` or calls libc's fork itself,
    the worker ends after the trace: isolation.sweep_orphans.)"""
    set_death_signal, getpid, getppid, leave = death_signal_setter(), os.getpid, os.getppid, posix._exit
    forking = [0]

    def before() -> None:
        forking[0] = getpid()

    def after_in_child() -> None:
        if set_death_signal() and getppid() != forking[0]:
            leave(0)

    os.register_at_fork(before=before, after_in_child=after_in_child)


@dataclass
class Setup:
    """What a forked child is handed: its pipes and dump file, the worker's descriptors it must close, its
    location page (child_location.py), and the worker it reports to."""

    events_write: int  # the child's end of its channel to the worker
    request_read: int  # its one request comes here
    dump_fd: int  # its stack dumps (process/postmortem.py reads them)
    close: Iterable[int]  # the worker's own descriptors
    location: ChildLocation
    worker_pid: int
    worker_events_fd: int  # the worker's end of the channel (to open it again: channel.py)
    mask: set  # the signal mask to restore (the worker blocks what could end it)


def run(setup: Setup, recipes: Iterable[dict]) -> NoReturn:
    """In the forked child: never returns."""
    real_exit = os._exit
    status = 0
    emit = None
    request = None
    location, worker_pid = setup.location, setup.worker_pid
    try:
        for fd in setup.close:
            if fd >= 0:
                os.close(fd)
        os.setsid()  # its own process group: killing the group takes anything it spawned
        die_with_parent(parent=worker_pid)
        adopt_orphans()  # a double-forked grandchild stays ours while the trace runs
        _forks_die_with_their_parent()
        os.dup2(setup.events_write, CHANNEL_FD)
        os.close(setup.events_write)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        dump = os.fdopen(setup.dump_fd, "w")
        faulthandler.enable(file=dump, all_threads=False)
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False)
        _report_exits_with_a_stack(dump)
        _report_self_kills_with_a_stack(dump)
        _note_own_limits(location)
        _keep_faulthandler(location)
        shield.refuse_signals_to(worker_pid, shield.parent_of(worker_pid))
        shield.unshield(setup.mask)
        channel = Channel(CHANNEL_FD, worker_pid, setup.worker_events_fd)
        refine, too_large, to_wire = postmortem.refine_event, postmortem.too_large, messages.to_wire
        decode_request = messages.decode_request
        name_process("fxlens-standby")

        def emit(event: messages.Event) -> None:
            event = refine(event)
            try:
                channel.send(to_wire(event))
            except EventTooLarge as error:
                smaller = too_large(event, error.size)
                if smaller is not None:
                    channel.send(to_wire(smaller))

        from fxlens.worker.analysis.analyse import Analysis
        from fxlens.worker.process.warm_up import recipe, warm_up

        warm_up(recipes, setup.request_read)
        with os.fdopen(setup.request_read, "rb") as requests:
            line = requests.readline()
        if not line:
            real_exit(0)  # the worker let this standby go unused (shutting down)
        name_process("fxlens-trace")
        emit(messages.Started())  # anything that kills this process from now on is the trace's
        request = decode_request(line)
        if not isinstance(request, messages.TraceRequest):
            raise messages.ProtocolError(f"a trace child was handed a {type(request).__name__}")
        _limit_memory(int(request.memory_mb if request.memory_mb is not None else DEFAULT_MEMORY_MB))
        analysis = Analysis(request)
        analysis.at_class, analysis.at_level, analysis.proving = location.at_class, location.at_level, location.proving
        analysis.describe_program = recipe
        location.start_sampling(analysis.path)
        report = with_room(analysis.run, emit)
        costs = bool(analysis.costs_due)  # counted after the report: `done` says they follow
        emit(messages.Done(report=postmortem.to_json(report), costs=costs))
        if costs:
            # background work from here on: the server and the editor showing the report come first (on
            # 2 cores the costs, the next standby and the server's answer otherwise share them)
            with contextlib.suppress(OSError):  # (a sandbox refusing it: the costs come all the same)
                os.nice(COST_NICENESS)
            try:
                with_room(analysis.emit_costs, emit)
            except BaseException:  # noqa: BLE001  user code raising through a cost run: the report stands
                pass
            emit(messages.End())
    except BaseException as error:  # noqa: BLE001  the user's SystemExit/KeyboardInterrupt end up here too
        status = ABORTED_STATUS
        try:
            if emit is not None and isinstance(request, messages.TraceRequest):
                emit(messages.Aborted(diagnostic=postmortem.diagnostic_for_abort(error, request)))
        except BaseException:  # noqa: BLE001  e.g. out of memory again: the exit status still tells
            pass
    finally:
        real_exit(status)

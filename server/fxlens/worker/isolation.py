"""The disposable child: fork, limits, output redirection, stack dumps, and reports for children that died."""
from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import re
import resource
import signal
import sys
import time
from typing import Any, Optional

from fxlens.report import Diagnostic, FileReport, class_from_json, to_json

_PR_SET_PDEATHSIG = 1
_CHANNEL_FD = 919  # out of the way of the low fds user code might close or write to


def die_with_parent() -> None:
    """Linux: get SIGKILL when the parent dies, so a killed server leaves no worker behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:
        os._exit(0)


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = current + megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def fork_analysis(request: dict, dump_path: str) -> tuple[int, int]:
    """Fork a child that analyses `request`; returns (fd to read its events from, its pid)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return read_fd, pid
    # --- in the child: never return from here ---
    status = 0
    try:
        os.close(read_fd)
        os.setsid()  # its own process group: killing the group takes anything it spawned
        die_with_parent()
        os.dup2(write_fd, _CHANNEL_FD)
        os.close(write_fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        dump = open(dump_path, "w")
        faulthandler.enable(file=dump, all_threads=False)
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False)
        _limit_memory(int(request.get("memory_mb", 0)))
        channel = os.fdopen(_CHANNEL_FD, "w", buffering=1)

        def emit(event: dict) -> None:
            channel.write(json.dumps(event) + "\n")

        from fxlens.worker.analyse import Analysis

        analysis = Analysis(request["path"], request["text"], request.get("levels", ["fx", "aten"]),
                            request.get("execution", "safe"), request.get("classes"), request.get("first"))
        report = analysis.run(emit)
        emit({"event": "done", "report": to_json(report)})
        channel.flush()
    except BaseException:  # noqa: BLE001  the user's SystemExit/KeyboardInterrupt end up here too
        status = 70
    finally:
        os._exit(status)


def request_stack_dump(pid: int, dump_path: str) -> None:
    """Ask a hung child where it is (faulthandler on SIGUSR1) before it is killed."""
    try:
        before = os.path.getsize(dump_path)
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline and os.path.getsize(dump_path) == before:
        time.sleep(0.01)
    time.sleep(0.02)


def kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


def reap(pid: int) -> int:
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


_DUMP_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def innermost_line_in_dump(dump_path: str, path: str) -> Optional[int]:
    """faulthandler prints the most recent call first: the first frame of `path` is the innermost."""
    try:
        with open(dump_path, errors="replace") as dump:
            text = dump.read()
    except OSError:
        return None
    for match in _DUMP_FRAME.finditer(text):
        if os.path.abspath(match.group("file")) == path:
            return int(match.group("line"))
    return None


def describe_status(status: int) -> tuple[str, str]:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        if number == signal.SIGKILL:
            return "crash", f"the trace process was killed ({name}), possibly for exceeding the memory limit"
        return "crash", f"the trace process crashed with {name}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    if code == 70:
        return "crash", "the code under trace stopped the trace process (SystemExit, KeyboardInterrupt or similar)"
    return "crash", f"the code under trace ended the trace process (exit status {code}, e.g. os._exit)"


def report_for_lost_child(job: Any, reason: Optional[str], status: int) -> dict:
    """The report for a child that never said `done`: what it had finished, plus where it died."""
    path = os.path.abspath(job.request["path"])
    report = FileReport(path, python=sys.version.split()[0])
    report.classes = [class_from_json(c) for c in job.classes.values()]
    lines = job.request["text"].splitlines()
    line = innermost_line_in_dump(job.dump_path, path) or 1
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    indent = len(text.encode()) - len(text.lstrip().encode())
    if reason is not None:
        category, message = "timeout", f"fxlens stopped the trace: {reason}"
        fix = "Look for an endless loop or a blocking call on this line; raise `fxlens.timeoutSeconds` if it is just slow."
    else:
        category, message = describe_status(status)
        fix = "Code that ends or crashes the interpreter cannot be traced; keep it out of the module's definitions."
    report.diagnostics.append(Diagnostic(line, indent, line, len(text.rstrip().encode()), "error", category,
                                         message, "The code under trace did not finish; fxlens discarded that run.",
                                         fix))
    return to_json(report)

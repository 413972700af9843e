"""Starting the worker: its process in the user's interpreter, and its first line (`ready`, or `fatal` when that
interpreter cannot run fxlens), read past any banner a wrapper script prints. WorkerClient.start uses it."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from fxlens import messages
from fxlens.cache_dirs import user_cache_dir

SERVER_DIR = str(Path(__file__).resolve().parents[2])  # the folder holding the `fxlens` package
# the worker keeps each event far below this (worker/failures/limits.py); a longer line is skipped, not fatal
LINE_LIMIT = 1 << 26
# a wrapper script may print a banner before it runs Python: this many lines before `ready` are skipped
MAX_BANNER_LINES = 100
# importing torch takes seconds; an interpreter that says nothing for this long is not fxlens's worker
START_SECONDS = 180.0


class WorkerUnavailable(Exception):
    """The worker could not start: no such interpreter, no torch, torch too old."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message, self.fix = message, fix

    def terminal_text(self) -> str:
        """What a command line prints: the message, then the fix on a line of its own."""
        return f"{self.message}\n  fix: {self.fix}" if self.fix else self.message


def exit_words(code: int) -> str:
    """How a worker that ended with this status is named to the user."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker was killed ({name})"
    return f"the worker exited (status {code})"


async def launch(python: str) -> asyncio.subprocess.Process:
    """The worker's process in `python`, importing this checkout's fxlens; WorkerUnavailable if it cannot run."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SERVER_DIR, env.get("PYTHONPATH")]))
    # what torch compiles outside the inductor level (which has its own folder) stays in fxlens's cache folder,
    # not in the `/tmp/torchinductor_<user>` every torch.compile on the machine shares
    env["TORCHINDUCTOR_CACHE_DIR"] = user_cache_dir("torch", "TORCHINDUCTOR_CACHE_DIR")
    try:
        return await asyncio.create_subprocess_exec(
            python,
            "-m",
            "fxlens.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=LINE_LIMIT,
        )
    except (FileNotFoundError, PermissionError) as error:
        raise WorkerUnavailable(
            f"cannot run the interpreter {python!r}: {error.strerror}",
            "Set fxlens.python to a Python interpreter that has torch installed.",
        ) from error


async def handshake(process: asyncio.subprocess.Process, python: str, stderr_lines: list[str]) -> messages.Ready:
    """The worker's `ready`, once it has imported torch; otherwise WorkerUnavailable, and the process is gone.
    `stderr_lines`: what the worker wrote on stderr so far (still growing), quoted when it exits at start."""
    try:
        first = await asyncio.wait_for(_first_event(process, python, stderr_lines), START_SECONDS)
    except BaseException as error:
        # exactly one worker, or none: whatever went wrong, this process does not stay behind
        if process.returncode is None:
            process.kill()
        await process.wait()
        if isinstance(error, asyncio.TimeoutError):
            raise WorkerUnavailable(
                f"{python} started but fxlens's worker did not answer within {START_SECONDS:g} s",
                "Set fxlens.python to a Python interpreter that has torch installed.",
            ) from error
        raise
    if isinstance(first, messages.Fatal):
        await process.wait()
        raise WorkerUnavailable(first.message, first.fix)
    if first.protocol != messages.PROTOCOL_VERSION:
        process.kill()
        await process.wait()
        raise WorkerUnavailable(
            f"the worker speaks protocol {first.protocol}, this server {messages.PROTOCOL_VERSION}",
            "Reinstall fxlens: its server and worker differ.",
        )
    return first


async def _first_event(
    process: asyncio.subprocess.Process, python: str, stderr_lines: list[str]
) -> messages.Ready | messages.Fatal:
    """The worker's first message, past any banner a wrapper script prints before Python runs."""
    assert process.stdout
    banner: list[str] = []
    while len(banner) <= MAX_BANNER_LINES:
        try:
            line = await process.stdout.readline()
        except ValueError:  # one line longer than LINE_LIMIT: not the worker
            line = b"?"
        if not line:
            await process.wait()
            tail = "\n".join([*banner[-3:], *stderr_lines[-5:]])
            raise WorkerUnavailable(
                f"the worker ({python}) exited at start: {tail or 'no output'}",
                "Check that this interpreter runs and has torch installed.",
            )
        try:
            event: messages.Event | None = messages.decode_event(line)
        except messages.ProtocolError:
            event = None
        if isinstance(event, (messages.Ready, messages.Fatal)):
            if banner:
                stderr_lines.append(f"{python} printed before the worker started: {banner[:3]}")
            return event
        banner.append(line.decode(errors="replace").rstrip()[:200])
    raise WorkerUnavailable(
        f"{python} is not a plain Python interpreter: it printed "
        f"{len(banner)} lines that are not fxlens's (first: {banner[0]!r})",
        "Set fxlens.python to the Python executable itself (e.g. `.venv/bin/python`), "
        "not a script that prints before running it.",
    )

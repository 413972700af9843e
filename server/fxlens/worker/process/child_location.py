"""Where a trace child is: the class it works on, the line of the user's file it runs and the fix it proves,
kept in memory it shares with the worker.

A stack dump (faulthandler, on a signal or a crash) needs a file descriptor and a signal handler, and
user code can close the one (`os.closerange(3, 4096)`) and replace the other. A shared anonymous
mapping is neither: the worker made it before the fork, and the child's sampling thread writes the
innermost line of the user's file into it a few times a second, so the worker can still say which
line a hung or crashed trace was running, whatever the code did to its process.
"""

from __future__ import annotations

import mmap
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

_SIZE = 4096
# sequence (odd while writing), samples taken, innermost line of the user's file, class name length, and what
# that line was at the last sample (one of STATES)
_HEADER = struct.Struct("<IIIII")
# "after": the last line of the class seen, fxlens's own code running after it; "running": on the stack;
# "raised": it raised what fxlens is handling (a recursion a million deep leaves a long traceback to read).
# Only a new class forgets the line: a sample can wait seconds for the interpreter lock (CPython hands it on
# rarely in a very deep recursion), so the one sample it gets may well fall between the user's code and fxlens's.
STATES = ("after", "running", "raised")
_AFTER, _RUNNING, _RAISED = range(3)
_NAME_AT = _HEADER.size
_MAX_NAME = 512
# the fix being proven: its deadline and its limit in seconds (time.monotonic(): one clock for every process of
# the machine), the step of it that runs (one of FIX_STEPS), the length of its id, then the id
_PROOF = struct.Struct("<ddII")
# "rewrite": fxlens's rewrite of the site (it reads the objects the line names, whose own code may run);
# "proof": the edited copy loaded, re-traced and run (worker/fixes/find.py)
FIX_STEPS = ("proof", "rewrite")
_PROOF_AT = _NAME_AT + _MAX_NAME
_MAX_FIX_ID = 256
# the level of the class being traced: the length of its name, then the name ("" between levels)
_LEVEL_AT = _PROOF_AT + _PROOF.size + _MAX_FIX_ID
_MAX_LEVEL = 31
_NOTE_AT = _LEVEL_AT + 1 + _MAX_LEVEL
_MAX_NOTE = _SIZE - _NOTE_AT - 4
SAMPLE_SECONDS = 0.05


class ChildLocation:
    """One shared page per trace child (made before the fork; both sides keep their mapping)."""

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, _SIZE, flags=mmap.MAP_SHARED)
        self._pack, self._unpack = _HEADER.pack_into, _HEADER.unpack_from  # the user may patch `struct`
        self._pack_proof = _PROOF.pack_into
        self._clock = time.monotonic  # (and `time`)
        import _thread

        self._lock = _thread.allocate_lock()  # the main thread and the sampler both write
        self._len, self._min = len, min  # builtins, too, may be patched by the time they are used

    def close(self) -> None:
        self.memory.close()

    # -- the child's side ------------------------------------------------------------------------

    def _write(
        self, line: int | None = None, name: str | None = None, sampled: bool = False, state: int = _RUNNING
    ) -> None:
        with self._lock:
            self._write_locked(line, name, sampled, state)

    def _write_locked(self, line: int | None, name: str | None, sampled: bool, state: int) -> None:
        seq, samples, old_line, length, _ = self._unpack(self.memory, 0)
        self._pack(self.memory, 0, seq + 1, samples, old_line, length, 0)  # odd: a reader retries
        if name is not None:
            data = name.encode("utf-8", "replace")[:_MAX_NAME]
            length = self._len(data)
            self.memory[_NAME_AT : _NAME_AT + length] = data
        self._pack(self.memory, 0, seq + 2, samples + sampled, old_line if line is None else line, length, state)

    def at_class(self, name: str) -> None:
        """The analysis starts on class `name` ("" between classes): what a hang or crash costs."""
        self.at_level("")
        self._write(name=name, line=0)

    def at_level(self, level: str) -> None:
        """The class's level `level` starts ("" once it has ended): a hang or a crash of a compile level from here
        on costs that level of the class, not its other levels (worker/process/lost_levels.py)."""
        data = level.encode("utf-8", "replace")[:_MAX_LEVEL]
        with self._lock:
            seq, samples, line, length, state = self._unpack(self.memory, 0)
            self._pack(self.memory, 0, seq + 1, samples, line, length, state)  # odd: a reader retries
            self.memory[_LEVEL_AT] = self._len(data)
            self.memory[_LEVEL_AT + 1 : _LEVEL_AT + 1 + self._len(data)] = data
            self._pack(self.memory, 0, seq + 2, samples, line, length, state)

    def proving(self, fix_id: str, seconds: float = 0.0, step: str = "proof") -> None:
        """Step `step` (of FIX_STEPS) of fix `fix_id` starts, and may take `seconds` ("" once it has ended): a hang
        or a crash from here on costs that fix, not its class (worker/fixes/find.py)."""
        deadline = self._clock() + seconds if fix_id else 0.0
        step_index = FIX_STEPS.index(step) if step in FIX_STEPS else 0
        data = fix_id.encode("utf-8", "replace")[:_MAX_FIX_ID]
        with self._lock:
            seq, samples, line, length, state = self._unpack(self.memory, 0)
            self._pack(self.memory, 0, seq + 1, samples, line, length, state)  # odd: a reader retries
            self.memory[_PROOF_AT + _PROOF.size : _PROOF_AT + _PROOF.size + self._len(data)] = data
            self._pack_proof(self.memory, _PROOF_AT, deadline, seconds, step_index, self._len(data))
            self._pack(self.memory, 0, seq + 2, samples, line, length, state)

    def note(self, text: str) -> None:
        """Something the code did that the worker should be able to tell (`RLIMIT_CPU set to (1, 1)`);
        notes add up, separated by "; "."""
        size = self._min(int.from_bytes(self.memory[_NOTE_AT : _NOTE_AT + 4], "little"), _MAX_NOTE)
        earlier = bytes(self.memory[_NOTE_AT + 4 : _NOTE_AT + 4 + size])
        data = ((earlier + b"; ") if earlier else b"") + text.encode("utf-8", "replace")
        data = data[:_MAX_NOTE]
        size = self._len(data)
        self.memory[_NOTE_AT : _NOTE_AT + 4] = size.to_bytes(4, "little")
        self.memory[_NOTE_AT + 4 : _NOTE_AT + 4 + size] = data

    def start_sampling(self, path: str) -> None:
        """A daemon thread that records the innermost line of `path` the main thread runs.

        Everything it calls is bound here, before user code runs (which may patch `time.sleep`,
        `threading` or `sys`)."""
        import _thread

        frames, sleep, main = sys._current_frames, time.sleep, _thread.get_ident()
        exceptions: Callable[[], dict[int, Any]] = getattr(sys, "_current_exceptions", dict)

        def handling() -> bool:
            handled = exceptions().get(main)
            return (handled[1] if isinstance(handled, tuple) else handled) is not None  # (3.11: exc_info)

        def sample() -> None:
            while True:
                frame = frames().get(main)
                line = 0
                while frame is not None:
                    if frame.f_code.co_filename == path:
                        if frame.f_lineno != frame.f_code.co_firstlineno:
                            line = frame.f_lineno or 0
                            break
                        # still at its `def` line, the frame has not started its body: its caller's line runs
                        line = line or frame.f_lineno or 0
                    frame = frame.f_back
                del frame
                if line:
                    self._write(line=line, sampled=True)
                else:  # the last line seen stays the one to name
                    self._write(sampled=True, state=_RAISED if handling() else _AFTER)
                sleep(SAMPLE_SECONDS)

        _thread.start_new_thread(sample, ())

    # -- the worker's side -----------------------------------------------------------------------

    def read(self) -> tuple[str, int, int, str, str]:
        """(class, line, samples taken, note, what the line was at the last sample: one of STATES) as last
        written; line 0 when unknown."""
        for _ in range(100):
            seq, samples, line, length, state = self._unpack(self.memory, 0)
            name = bytes(self.memory[_NAME_AT : _NAME_AT + min(length, _MAX_NAME)])
            if seq % 2 == 0 and self._unpack(self.memory, 0)[0] == seq:
                break
        size = min(int.from_bytes(self.memory[_NOTE_AT : _NOTE_AT + 4], "little"), _MAX_NOTE)
        note = bytes(self.memory[_NOTE_AT + 4 : _NOTE_AT + 4 + size]).decode("utf-8", "replace")
        return name.decode("utf-8", "replace"), line, samples, note, STATES[state] if state < len(STATES) else "after"

    def level(self) -> str:
        """The level of the class being traced ("" when none is)."""
        data = b""
        for _ in range(100):
            seq = self._unpack(self.memory, 0)[0]
            length = min(self.memory[_LEVEL_AT], _MAX_LEVEL)
            data = bytes(self.memory[_LEVEL_AT + 1 : _LEVEL_AT + 1 + length])
            if seq % 2 == 0 and self._unpack(self.memory, 0)[0] == seq:
                break
        return data.decode("utf-8", "replace")

    def proof(self) -> tuple[str, float, float, str]:
        """(the fix whose step runs, its deadline on time.monotonic(), its limit in seconds, the step: one of
        FIX_STEPS); ("", 0, 0, "proof") when none."""
        fix_id, deadline, seconds, step = b"", 0.0, 0.0, 0
        for _ in range(100):
            seq = self._unpack(self.memory, 0)[0]
            deadline, seconds, step, length = _PROOF.unpack_from(self.memory, _PROOF_AT)
            start = _PROOF_AT + _PROOF.size
            fix_id = bytes(self.memory[start : start + min(length, _MAX_FIX_ID)])
            if seq % 2 == 0 and self._unpack(self.memory, 0)[0] == seq:
                break
        if not fix_id:
            return "", 0.0, 0.0, FIX_STEPS[0]
        named = FIX_STEPS[step] if step < len(FIX_STEPS) else FIX_STEPS[0]
        return fix_id.decode("utf-8", "replace"), deadline, seconds, named

"""Room on CPython's frame stack for a trace, so that no hot call of it sits on a chunk boundary.

CPython (3.11, where this was measured) keeps Python frames on a per-thread stack made of chunks (16 KiB
at first) and frees a chunk as soon as the first frame in it returns. A call that crosses the end of a
chunk therefore costs an mmap, its page faults and an munmap (about 10 µs) each time it is made, where a
call costs tens of nanoseconds. Which calls cross depends only on how deep the trace runs: with the
analysis run in one process under fxlens's frames, torch.export's per-node stack capture on the README's
example sat exactly there (8 of the 24 captures of a trace took 0.8 ms instead of 0.05 ms: ~10 ms of a
45 ms export), while the same export from raw torch's shallower stack did not. Where it falls in a trace
child depends on the depth of each class's trace.

`with_room(step, *args)` is `step(*args)` called from one frame that asks for a 256 KiB chunk and uses half
of it, so the trace under it has about 15,000 words (hundreds of frames) before the next boundary.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

# stack slots of the frame that holds the room: a frame just over 128 KiB gets a chunk of 256 KiB (chunk
# sizes double from 16 KiB), the rest of which the frames called from it use
ROOM_WORDS = 16_400


def _call(step: Callable[..., Any], *args: Any) -> Any:
    return step(*args)


def _room_code() -> types.CodeType:
    code = _call.__code__.replace(co_stacksize=ROOM_WORDS, co_name="with_room")
    if sys.version_info >= (3, 11):  # co_qualname is new in 3.11 (3.10 names a code by co_name alone)
        code = code.replace(co_qualname="with_room")
    return code


# the same function with a bigger frame: the slots are never used, their size is what takes the chunk
with_room: Callable[..., Any] = types.FunctionType(_room_code(), globals(), "with_room")

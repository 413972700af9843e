"""Limits the worker's steps share, torch-free so that the failure rules can name them too."""

# real CPU weights only for models this small (elements of parameters + buffers, 200 MB as float32)
MAX_CPU_ELEMENTS = 50_000_000

# one event over the channel (a class's report a level at a time, or the file's): far above a
# 5,000-node graph (≈ 3 MB), far below the server's line limit (worker_start.LINE_LIMIT)
MAX_EVENT_BYTES = 16 << 20
# one text made from user values (a node as torch prints it, an exception's message, a value's repr)
MAX_TEXT_CHARS = 4000


def bounded(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text`, cut to `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def bounded_tail(text: str, limit: int = 4 * MAX_TEXT_CHARS) -> str:
    """`text` cut to its last `limit` characters: a traceback's innermost frames are what tells."""
    if len(text) <= limit:
        return text
    return f"({len(text) - limit:,} characters before)…{text[-limit:]}"

"""Which buffer texts the worker holds: each version crosses the pipe once (worker/process/texts.py).

A text is known by identity: a document keeps one `str` per version, and the same object is what its
trace, its on-demand levels and its neighbours' traces send, so nothing hashes or compares 5 MB. The
worker's store is bounded; when it no longer holds a key it says `unknown-text` and the request goes
again with its texts inline, so this record may be wrong without a trace failing.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from fxlens import messages

# as many as the worker keeps (worker/process/texts.py MAX_TEXTS): what is held here is held there
MAX_TEXTS = 64


class SentTexts:
    def __init__(self, write: Callable[[bytes], None], size: int = MAX_TEXTS) -> None:
        self.write = write
        self.size = size
        self._held: OrderedDict[int, tuple[str, str]] = OrderedDict()  # id(text) -> (the text, its key)
        self._keys = itertools.count(1)

    def key(self, text: str) -> str:
        """`text`'s key, sending the text first if the worker has not been sent it."""
        entry = self._held.get(id(text))
        if entry is not None and entry[0] is text:  # (held here, so its id is not another's)
            self._held.move_to_end(id(text))
            return entry[1]
        key = f"t{next(self._keys)}"
        raw = text.encode("utf-8", errors="surrogatepass")
        self.write(messages.encode(messages.TextHeader(key, len(raw))).encode())
        self.write(raw)
        self._held[id(text)] = (text, key)
        while len(self._held) > self.size:
            self._held.popitem(last=False)
        return key

    def keyed(self, request: messages.TraceRequest) -> messages.TraceRequest:
        """A trace request naming its texts by key instead of carrying them."""
        assert request.text is not None
        return replace(
            request,
            text=None,
            buffers={},
            text_key=self.key(request.text),
            buffer_keys={path: self.key(text) for path, text in request.buffers.items()},
        )

    def forget(self, keys: list[str]) -> None:
        """The worker lost these (a restart, its bound): sent again when next used."""
        lost = set(keys)
        for ident in [i for i, (_, k) in self._held.items() if k in lost]:
            del self._held[ident]

"""The texts the server sent, kept by key, and the reading of the worker's stdin that brings them.

Each buffer version crosses the pipe once, as raw UTF-8 after a header line (messages.TextHeader), not
as JSON inside every request: a 5 MB buffer turned into JSON costs the server's event
loop ~10-40 ms per request (the trace, each on-demand level, each neighbour's trace that imports it). A
request then names its texts by key (`text_key`, `buffer_keys`); one the worker no longer holds (a
bounded store) is answered `unknown-text`, and the server sends that request again with its texts in it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from fxlens import messages

# what the worker keeps: the recent versions of the open buffers (a trace names its own and its neighbours')
MAX_TEXTS = 64
MAX_CHARS = 256 << 20
MAX_TEXT_BYTES = 1 << 30  # one text's header asking for more is not fxlens's server talking


class UnknownText(Exception):
    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"texts not held: {', '.join(keys)}")
        self.keys = keys


class TextStore:
    def __init__(self, size: int = MAX_TEXTS, chars: int = MAX_CHARS) -> None:
        self.size, self.chars = size, chars
        self._held: OrderedDict[str, str] = OrderedDict()
        self._total = 0

    def put(self, key: str, text: str) -> None:
        old = self._held.pop(key, None)
        self._total -= len(old) if old is not None else 0
        self._held[key] = text
        self._total += len(text)
        while len(self._held) > 1 and (len(self._held) > self.size or self._total > self.chars):
            _, dropped = self._held.popitem(last=False)
            self._total -= len(dropped)

    def resolve(self, request: messages.TraceRequest) -> messages.TraceRequest:
        """A trace request with its texts in it (`text`, `buffers`), from their keys where it names them;
        UnknownText with the keys not held."""
        text_key, buffer_keys = request.text_key, request.buffer_keys
        if text_key is None and buffer_keys is None:
            return request  # the texts are in the request itself
        keys = {"": text_key} if text_key is not None else {}
        keys.update(buffer_keys or {})
        missing = [k for k in keys.values() if not isinstance(k, str) or k not in self._held]
        if missing:
            raise UnknownText([str(k) for k in missing])
        for key in keys.values():
            self._held.move_to_end(key)
        buffers = {**request.buffers, **{p: self._held[k] for p, k in (buffer_keys or {}).items()}}
        text = self._held[text_key] if text_key is not None else request.text
        return replace(request, text=text, buffers=buffers, text_key=None, buffer_keys=None)


class Stdin:
    """The worker's stdin: request lines, each TextHeader followed by that many raw bytes (kept in `store`)."""

    def __init__(self, store: TextStore) -> None:
        self.store = store
        self._data = bytearray()  # (deleting from its front is cheap: no copy of what follows)
        self._frame: tuple[str, int] | None = None  # the text whose bytes are being read

    def feed(self, chunk: bytes) -> list[messages.Request | messages.ProtocolError]:
        """The requests `chunk` completes, in order (a line that is not one: a ProtocolError in its place)."""
        self._data += chunk
        out: list[messages.Request | messages.ProtocolError] = []
        while True:
            if self._frame is not None:
                key, size = self._frame
                if len(self._data) < size:
                    return out
                raw = bytes(self._data[:size])
                del self._data[:size]
                self._frame = None
                try:
                    self.store.put(key, raw.decode("utf-8", errors="surrogatepass"))
                except UnicodeDecodeError as error:
                    out.append(messages.ProtocolError(f"text {key} is not UTF-8: {error}"))
                continue
            end = self._data.find(b"\n")
            if end < 0:
                return out
            line = bytes(self._data[:end])
            del self._data[: end + 1]
            if not line.strip():
                continue
            try:
                request = messages.decode_request(line)
            except messages.ProtocolError as error:
                out.append(error)
                continue
            if not isinstance(request, messages.TextHeader):
                out.append(request)
            elif not 0 <= request.size <= MAX_TEXT_BYTES:
                out.append(messages.ProtocolError(f"a text of {request.size} bytes"))
            else:
                self._frame = (request.key, request.size)

"""Each buffer version crosses to the worker once: the server's record of what it sent, and the worker's
reading of its stdin (texts as raw bytes after a header, requests naming them by key)."""

import pytest
from fxlens import messages
from fxlens.engine.sent_texts import SentTexts
from fxlens.messages import Ping, ProtocolError, TraceRequest
from fxlens.worker.process.texts import Stdin, TextStore, UnknownText

BIG = "x = 1  # é \udc80\n" * 50_000  # a lone surrogate, as an editor may hold one


def _pipe():
    written: list[bytes] = []
    return written, SentTexts(written.append)


def test_a_text_is_sent_once_and_named_by_key_after():
    written, sent = _pipe()
    other = "import torch\n"
    first = sent.keyed(TraceRequest("/a.py", id=1, text=BIG, buffers={"/b.py": other}))
    again = sent.keyed(TraceRequest("/a.py", id=2, text=BIG, buffers={"/b.py": other}))
    assert "text" not in messages.to_wire(first) and messages.to_wire(first)["buffers"] == {}
    assert first.text_key == again.text_key and first.buffer_keys == again.buffer_keys
    assert len(written) == 4  # two texts, a header and the bytes each, for both requests
    sent.forget([first.text_key])
    third = sent.keyed(TraceRequest("/a.py", id=3, text=BIG))
    assert third.text_key != first.text_key and len(written) == 6


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_the_worker_reads_texts_and_requests_however_the_pipe_cuts_them(chunk):
    written, sent = _pipe()
    keyed = sent.keyed(
        TraceRequest("/a.py", id=1, text=BIG[:3000] if chunk < 100 else BIG, buffers={"/b.py": "y = 2\n"})
    )
    stream = b"".join(written) + messages.encode(keyed).encode() + b'{"type": "ping", "id": 9}\n'
    stdin = Stdin(TextStore())
    read = [m for i in range(0, len(stream), chunk) for m in stdin.feed(stream[i : i + chunk])]
    assert [type(m) for m in read] == [TraceRequest, Ping]
    request = stdin.store.resolve(read[0])
    assert request.text == (BIG[:3000] if chunk < 100 else BIG) and request.buffers == {"/b.py": "y = 2\n"}
    assert request.text_key is None and request.path == "/a.py"


def test_a_text_the_worker_no_longer_holds_is_named_in_its_answer():
    store = TextStore(size=2)
    for key in ("t1", "t2", "t3"):
        store.put(key, key)
    with pytest.raises(UnknownText) as lost:
        store.resolve(TraceRequest("/a.py", text_key="t1", buffer_keys={"/b.py": "t3"}))
    assert lost.value.keys == ["t1"]
    inline = TraceRequest("/a.py", text="x = 1\n")
    assert store.resolve(inline) is inline  # a request carrying its texts needs none held


def test_a_bad_line_or_header_is_an_error_in_its_place_and_reading_goes_on():
    stdin = Stdin(TextStore())
    out = stdin.feed(b'not json\n{"type": "text", "key": 5, "bytes": 3}\n[1]\n{"type": "ping"}\n')
    assert [type(m) for m in out] == [ProtocolError, ProtocolError, ProtocolError, Ping]

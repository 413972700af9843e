"""Hover after an edit in big files, through a real client: a file of 10,000 identical lines and a 5 MB
file, each edited by one character (an incremental didChange, as editors send) and hovered at once,
then hovered without pause until the retrace of that edit is complete. Every answer should take
< 50 ms (issue 17): the edit's line map, the shortcut parse and the report's merge must never hold
the event loop.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from latency import percentiles
from lsp_session import FXLENS_COMMAND, Doc, Session
from lsprotocol import types

MODEL = """import torch
from torch import nn


# fxlens: Residual(16)(torch.randn(4, 16))
class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x

"""
HOVER_LINE, HOVER_COL = 11, 26  # 0-based: `self.fc` in forward


def identical_lines(count: int = 10_000) -> str:
    """A generated table: the same line 10,000 times (what made the line diff quadratic)."""
    return MODEL + "SCALE = [\n" + "    1.0,\n" * count + "]\n"


def five_megabytes() -> str:
    """5 MB of distinct lines in a string constant (an embedded vocabulary), after the model."""
    body = "".join(f"token_{i:07d} {i * 7919 % 100_003}\n" for i in range(5_000_000 // 21))
    return MODEL + 'VOCAB = """\n' + body + '"""\n'


def _edit(session: Session, doc: Doc, line: int, character: int, new: str) -> float:
    """Replace one character at (line, character); returns when the notification was sent."""
    lines = doc.text.split("\n")
    lines[line] = lines[line][:character] + new + lines[line][character + 1 :]
    doc.text = "\n".join(lines)
    del lines  # freeing 240,000 strings takes the client ~5 ms: not after the clock starts
    doc.version += 1
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, character), types.Position(line, character + 1)), text=new
    )
    sent = time.perf_counter()
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[change],
        )
    )
    return sent


async def _one_file(session: Session, path: Path, rounds: int) -> dict:
    doc = session.open(path)
    await session.report_complete(doc)
    middle = doc.text.count("\n") // 2 + MODEL.count("\n") // 2
    first, through, retraces, answered = [], [], [], 0
    for round_ in range(rounds):
        sent = _edit(session, doc, middle, 4, "2" if round_ % 2 == 0 else "1")
        seconds, result = await session.hover(doc, HOVER_LINE, HOVER_COL)
        first.append(time.perf_counter() - sent)
        answered += result is not None
        version = doc.version
        while (
            session.first_event(
                "fxlens/reportChanged",
                sent,
                lambda p, version=version: p["uri"] == doc.uri and p["version"] == version and p["complete"],
            )
            is None
        ):
            seconds, result = await session.hover(doc, HOVER_LINE, HOVER_COL)
            through.append(seconds)
            answered += result is not None
            await asyncio.sleep(0)  # let the client's loop take the server's notifications
        retrace = session.first_event("fxlens/reportChanged", sent, lambda p, version=version: p["version"] == version)
        retraces.append(retrace.at - sent)
    return {
        "lines": doc.text.count("\n") + 1,
        "chars": len(doc.text),
        "rounds": rounds,
        "median_first_hover_ms": statistics.median(first) * 1000,
        "max_first_hover_ms": max(first) * 1000,
        "through_retrace": percentiles(through),
        "answered": answered,
        "hovers": len(first) + len(through),
        "median_retrace_s": statistics.median(retraces),
    }


async def big_file_hovers(folder: Path, rounds: int = 5) -> dict:
    results = {}
    session = Session(FXLENS_COMMAND)
    await session.start(folder, {"levels": ["fx", "aten"]})
    try:
        await session.worker_ready()
        for name, make in (("10000 identical lines", identical_lines), ("5 MB", five_megabytes)):
            path = folder / f"{name.split()[0]}_{name.split()[1]}.py"
            path.write_text(make())
            results[name] = await _one_file(session, path, rounds)
    finally:
        await session.stop()
    return results


if __name__ == "__main__":
    import json
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fxlens-bench-") as temp:
        print(
            json.dumps(asyncio.run(big_file_hovers(Path(temp), int(sys.argv[1]) if len(sys.argv) > 1 else 5)), indent=1)
        )

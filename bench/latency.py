"""Hover latency through a real client: fxlens against jedi-language-server on the same positions, and
fxlens while another document is re-traced without pause."""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from pathlib import Path

from lsp_session import FXLENS_COMMAND, JEDI_COMMAND, Doc, Session
from specs import MODELS

_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_]")
POSITIONS_PER_LINE = 6
ROUNDS = 4  # the two servers take turns, so machine noise falls on both alike


def percentiles(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return {"count": 0}

    def pick(q: float) -> float:
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]

    return {
        "count": len(ms),
        "p50_ms": pick(0.50),
        "p95_ms": pick(0.95),
        "p99_ms": pick(0.99),
        "mean_ms": statistics.fmean(ms),
        "max_ms": ms[-1],
    }


def hover_positions(text: str, minimum: int) -> list[tuple[int, int]]:
    """Identifier starts on every non-blank line (a few per line), repeated until there are `minimum`."""
    once = []
    for line_index, line in enumerate(text.split("\n")):
        starts = [m.start() for m in _IDENTIFIER.finditer(line)]
        if not starts:
            continue
        step = max(1, len(starts) // POSITIONS_PER_LINE)
        once += [(line_index, col) for col in starts[::step][:POSITIONS_PER_LINE]]
    positions = []
    while len(positions) < minimum:
        positions += once
    return positions


async def _hovers(session: Session, doc: Doc, positions: list[tuple[int, int]]) -> tuple[list[float], int]:
    times, answered = [], 0
    for line, col in positions:
        seconds, result = await session.hover(doc, line, col)
        times.append(seconds)
        answered += result is not None
    return times, answered


async def hover_vs_jedi(folder: Path, count: int) -> dict:
    spec = MODELS["gpt2-12"]
    path = spec.materialise(folder)
    positions = hover_positions(path.read_text(), count)
    fxlens, jedi = Session(FXLENS_COMMAND), Session(JEDI_COMMAND)
    await fxlens.start(folder)
    await jedi.start(folder)
    try:
        await fxlens.worker_ready()
        fx_doc, jedi_doc = fxlens.open(path), jedi.open(path)
        await fxlens.report_complete(fx_doc)
        # one unmeasured pass each: jedi fills its caches, fxlens renders nothing it will not render again
        await _hovers(fxlens, fx_doc, positions[: len(positions) // ROUNDS])
        await _hovers(jedi, jedi_doc, positions[: len(positions) // ROUNDS])
        times = {"fxlens": [], "jedi": []}
        answered = {"fxlens": 0, "jedi": 0}
        chunk = -(-len(positions) // ROUNDS)
        for start in range(0, len(positions), chunk):
            part = positions[start : start + chunk]
            for name, session, doc in (("fxlens", fxlens, fx_doc), ("jedi", jedi, jedi_doc)):
                seconds, hits = await _hovers(session, doc, part)
                times[name] += seconds
                answered[name] += hits
    finally:
        await asyncio.gather(fxlens.stop(), jedi.stop())
    result = {name: {**percentiles(t), "answered": answered[name]} for name, t in times.items()}
    result["model"] = path.name
    result["ratio_p50"] = result["fxlens"]["p50_ms"] / result["jedi"]["p50_ms"]
    result["ratio_p99"] = result["fxlens"]["p99_ms"] / result["jedi"]["p99_ms"]
    return result


async def hover_under_load(folder: Path, count: int, min_retraces: int = 3) -> dict:
    """Hover in document A without pause while document B is edited again as soon as each trace ends."""
    spec = MODELS["gpt2-12"]
    path_a = spec.materialise(folder)
    path_b = folder / "gpt2_busy.py"
    path_b.write_text(spec.text())
    positions = hover_positions(path_a.read_text(), count)
    session = Session(FXLENS_COMMAND)
    await session.start(folder)
    try:
        await session.worker_ready()
        doc_a, doc_b = session.open(path_a), session.open(path_b)
        await session.report_complete(doc_a)
        await session.report_complete(doc_b)
        idle, _ = await _hovers(session, doc_a, positions)
        stop = asyncio.Event()
        retraces = []

        async def keep_retracing() -> None:
            while not stop.is_set():
                sent = session.change(doc_b, spec.edited(doc_b.text))
                event = await session.report_complete(doc_b, after=sent)
                retraces.append(event.at - sent)

        busy_task = asyncio.create_task(keep_retracing())
        loaded: list[float] = []
        answered = 0
        started = time.perf_counter()
        try:
            while len(loaded) < count or len(retraces) < min_retraces:
                seconds, hits = await _hovers(session, doc_a, positions[:100])
                loaded += seconds
                answered += hits
        finally:
            stop.set()
            await busy_task
    finally:
        await session.stop()
    return {
        "idle": percentiles(idle),
        "under_load": {**percentiles(loaded), "answered": answered},
        "retraces_of_b": len(retraces),
        "retrace_median_s": statistics.median(retraces),
        "window_s": time.perf_counter() - started,
    }

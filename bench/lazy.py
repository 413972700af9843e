"""fx/aten edit -> result with the deeper levels on and off, same run, medians (issue 12: unchanged).

    python bench/lazy.py [MODEL_KEY] [--rounds N]     # default gpt2-12, 5 rounds

Two servers, one with `fxlens.levels` at its default (fx, aten), one asking for every level (fx, aten,
core-aten, backward, dynamo), edited in turns with the same edit. Measured: didChange -> the moment the
edited text's fx and aten results are published (the reportChanged that says every class being traced
has them: `complete` when those are all the levels, the stage event before the deeper ones otherwise).
Each round waits for the complete report (deeper levels included) before the next edit, so both start
from an idle worker.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import tempfile
from pathlib import Path

from lsp_session import FXLENS_COMMAND, Session
from specs import MODELS

EVERY_LEVEL = ["fx", "aten", "core-aten", "backward", "dynamo"]


def _cheap_published(session: Session, uri: str, version: int, after: float):
    return session.first_event(
        "fxlens/reportChanged",
        after,
        lambda p: p["uri"] == uri
        and p["version"] == version
        and (p["complete"] or (p.get("className") is None and "aten" in (p.get("levels") or []))),
    )


async def main(model: str, rounds: int) -> dict:
    spec = MODELS[model]
    with tempfile.TemporaryDirectory(prefix="fxlens-bench-lazy-") as scratch:
        sessions, docs = {}, {}
        for name, levels in (("off", None), ("on", EVERY_LEVEL)):
            folder = Path(scratch) / name
            folder.mkdir()
            sessions[name] = Session(FXLENS_COMMAND)
            await sessions[name].start(folder, {"levels": levels} if levels else None)
            await sessions[name].worker_ready()
            docs[name] = sessions[name].open(spec.materialise(folder))
            await sessions[name].report_complete(docs[name])
        times: dict[str, list[float]] = {"off": [], "on": []}
        deep: list[float] = []
        try:
            for _ in range(rounds):
                for name in ("off", "on"):  # taking turns: machine noise falls on both alike
                    session, doc = sessions[name], docs[name]
                    sent = session.change(doc, spec.edited(doc.text))
                    cheap = await session.until(
                        functools.partial(_cheap_published, session, doc.uri, doc.version, sent),
                        f"fx/aten of v{doc.version} ({name})",
                    )
                    complete = await session.report_complete(doc, after=sent)
                    times[name].append(cheap.at - sent)
                    if name == "on":
                        deep.append(complete.at - sent)
        finally:
            for session in sessions.values():
                await session.stop()
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    return {
        "model": model,
        "rounds": rounds,
        "fx_aten_off_s": round(off, 3),
        "fx_aten_on_s": round(on, 3),
        "ratio": round(on / off, 2),
        "every_level_on_s": round(statistics.median(deep), 3),
        "runs": {k: [round(t, 3) for t in v] for k, v in times.items()},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-12")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.model, args.rounds)), indent=1))

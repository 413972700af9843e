"""Request → report (`done`) of an edited file's trace through the worker client, as the editor asks
(class cost on) and as `fxlens check` asks (cost off), taking turns in one run: the editor's report
should not wait for the cost (FlopCounterMode's forward and backward), which comes after it.

    python3 bench/cost_after_done.py [rounds] [model]      (model: small, gpt2-12, ...: specs.MODELS)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from specs import MODELS, ROOT

sys.path.insert(0, str(ROOT / "server"))
from fxlens.engine.worker_client import Listeners, TraceOptions, WorkerClient

IDLE_SECONDS = 0.3  # between traces, as between edits: the worker forks its next standby meanwhile


async def report_times(rounds: int, model: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = MODELS[model].materialise(Path(folder))
        text = path.read_text()
        client = WorkerClient()
        await client.start()
        times: dict[str, list[float]] = {"editor (cost on)": [], "check (cost off)": []}
        costs_heard = asyncio.Event()
        try:
            for i in range(rounds + 1):  # the first round warms the worker up: not counted
                for name, cost in (("editor (cost on)", True), ("check (cost off)", False)):
                    edited = text + f"\n# edit {i} {name}\n"  # every class traced again (nothing `known`)
                    costs_heard.clear()
                    start = time.perf_counter()
                    await client.submit(
                        str(path),
                        edited,
                        TraceOptions(levels=("fx", "aten"), cost=cost),
                        listeners=Listeners(on_cost=lambda *_: costs_heard.set()),
                    )
                    took = time.perf_counter() - start
                    if cost:
                        await costs_heard.wait()  # (the next trace would give up the costs still coming)
                    if i:
                        times[name].append(took)
                    await asyncio.sleep(IDLE_SECONDS)
        finally:
            await client.stop()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "model": model,
        "rounds": rounds,
        "median_s": medians,
        "ratio_editor_to_check": medians["editor (cost on)"] / medians["check (cost off)"],
    }


if __name__ == "__main__":
    print(
        json.dumps(
            asyncio.run(
                report_times(
                    int(sys.argv[1]) if len(sys.argv) > 1 else 15, sys.argv[2] if len(sys.argv) > 2 else "small"
                )
            ),
            indent=1,
        )
    )

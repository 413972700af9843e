"""An edit's trace (request → `done`, through the worker client, as the editor asks after the debounce) by
two checkouts' workers taking turns in one run, beside raw torch tracing the same class: what a change
to the worker costs or saves the editor, without the machine's noise between two runs.

    python3 bench/edit_checkouts.py BASE_SERVER_DIR [NEW_SERVER_DIR] [--model small] [--rounds 15]

e.g. `git worktree add /tmp/base <rev>` and `python3 bench/edit_checkouts.py /tmp/base/server`.
Each round toggles the model's edit (specs.MODELS) and asks for fx and aten with the fingerprints of the
worker's last result, so only the edited classes are traced again, as in the editor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from edits import WarmTorch
from specs import MODELS, ROOT

sys.path.insert(0, str(ROOT / "server"))
from fxlens.engine import worker_client, worker_start
from fxlens.engine.scheduler import DEBOUNCE_SECONDS

OPTIONS = worker_client.TraceOptions(levels=("fx", "aten"))


async def _client(server: str) -> worker_client.WorkerClient:
    """A worker started from `server`'s checkout (worker_start reads SERVER_DIR when it starts one)."""
    worker_start.SERVER_DIR = server
    client = worker_client.WorkerClient()
    await client.start()
    return client


async def edit_times(servers: list[str], model: str, rounds: int, idle: float = DEBOUNCE_SECONDS) -> dict:
    spec = MODELS[model]
    with tempfile.TemporaryDirectory() as folder:
        path = spec.materialise(Path(folder))
        clients = [await _client(server) for server in servers]
        torch = await asyncio.to_thread(WarmTorch)
        texts = {server: path.read_text() for server in servers}
        known: dict[str, dict[str, str]] = {server: {} for server in servers}
        times: dict[str, list[float]] = {server: [] for server in [*servers, "raw torch"]}
        traced: list[str] = []
        try:
            for i in range(rounds + 1):  # the first round fills `known`: not counted
                for server, client in zip(servers, clients):
                    text = texts[server] = spec.edited(texts[server])
                    await asyncio.sleep(idle)  # as after an edit: the worker idle at least the debounce
                    start = time.perf_counter()
                    report = await client.submit(
                        str(path),
                        text,
                        OPTIONS,
                        worker_client.TraceAsk(known=known[server]),
                        worker_client.Listeners(on_cost=lambda *_: None),
                    )
                    took = time.perf_counter() - start
                    retraced = [c.name for c in report.classes]
                    known[server].update({c.name: c.fingerprint for c in report.classes})
                    if i:
                        times[server].append(took)
                        traced = retraced
                if i:
                    await asyncio.sleep(DEBOUNCE_SECONDS)
                    times["raw torch"].append(
                        (await asyncio.to_thread(torch.trace, model, path, texts[servers[-1]], traced))["seconds"]
                    )
        finally:
            for client in clients:
                await client.stop()
            torch.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "model": model,
        "rounds": rounds,
        "classes_traced": traced,
        "median_s": medians,
        "ratio_to_raw_torch": {server: medians[server] / medians["raw torch"] for server in servers},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("new", nargs="?", default=str(ROOT / "server"))
    parser.add_argument("--model", default="small")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--idle", type=float, default=DEBOUNCE_SECONDS, help="seconds between edits")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(edit_times([args.base, args.new], args.model, args.rounds, args.idle)), indent=1))


if __name__ == "__main__":
    main()

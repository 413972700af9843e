"""Scale: time to a full report (fx + aten with shapes) of big models, node counts and memory, beside raw
torch.export of the same model.

Each measurement runs in its own process (`python bench/scale.py fxlens|export ...`) so that
resource.getrusage(RUSAGE_CHILDREN) in it covers exactly one server: the server reaps its worker,
the worker reaps each trace child, and Linux carries the largest peak RSS up that chain of waits.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lsp_session import FXLENS_COMMAND, Session, rss_mb
from lsprotocol import types
from specs import BENCH, MODELS

SCALE_MODELS = ("gpt2-12", "gpt2-48", "llama70b")


def _payload_value(payload, key):
    return payload.get(key) if isinstance(payload, dict) else getattr(payload, key, None)


async def _node_counts(session: Session, uri: str) -> dict:
    """Per class and level, the number of nodes in the report (through fxlens.showGraph)."""
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    counts: dict[str, dict[str, int]] = {}
    for lens in lenses:
        _, class_name, level = lens.command.arguments
        payload = await session.execute("fxlens.showGraph", uri, class_name, level)
        graph = _payload_value(payload, "graph")
        counts.setdefault(class_name, {})[level] = len(_payload_value(graph, "nodes"))
    return counts


async def probe_fxlens(key: str, folder: Path) -> dict:
    """One server: warm worker, open the model, wait for the complete report; memory from /proc and rusage."""
    spec = MODELS[key]
    path = spec.materialise(folder)
    session = Session(FXLENS_COMMAND)
    await session.start(folder)
    try:
        await session.worker_ready()
        info = await session.execute("fxlens.debugInfo")
        server_pid = _payload_value(info, "serverPid")
        server_idle_mb = rss_mb(server_pid)
        opened = time.perf_counter()
        doc = session.open(path)
        report = await session.report_complete(doc)
        seconds = report.at - opened
        server_after_mb = rss_mb(server_pid)
        counts = await _node_counts(session, doc.uri)
    finally:
        await session.stop()
    tree_peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    top = spec.build.split("(")[0]
    return {
        "model": key,
        "file": path.name,
        "seconds": seconds,
        "nodes": counts,
        "top_class_nodes": counts.get(top, {}),
        "all_nodes": sum(sum(c.values()) for c in counts.values()),
        "server_idle_rss_mb": server_idle_mb,
        "server_rss_after_report_mb": server_after_mb,
        "worker_peak_rss_mb": tree_peak_mb,
    }


def _run_json(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(folder: Path, runs: int, models: tuple[str, ...] = SCALE_MODELS) -> dict:
    """Per model, in turns: fxlens (fresh server, warm worker) and raw torch.export, dynamic and static."""
    results = {}
    for key in models:
        fx, dynamic, static = [], [], []
        for run in range(runs):
            run_folder = folder / f"{key}-{run}"
            run_folder.mkdir(parents=True, exist_ok=True)
            fx.append(_run_json([str(BENCH / "scale.py"), "fxlens", key, str(run_folder)]))
            dynamic.append(_run_json([str(BENCH / "raw_torch.py"), "export", key, "dynamic"]))
            static.append(_run_json([str(BENCH / "raw_torch.py"), "export", key, "static"]))
        fx_median = statistics.median(r["seconds"] for r in fx)
        dynamic_median = statistics.median(r["seconds"] for r in dynamic)
        results[key] = {
            "runs": runs,
            "fxlens": fx,
            "raw_export_dynamic": dynamic,
            "raw_export_static": static,
            "median_fxlens_s": fx_median,
            "median_raw_export_dynamic_s": dynamic_median,
            "median_raw_export_static_s": statistics.median(r["seconds"] for r in static),
            "ratio_to_dynamic_export": fx_median / dynamic_median,
            "worker_peak_rss_mb": max(r["worker_peak_rss_mb"] for r in fx),
            "server_idle_rss_mb": statistics.median(r["server_idle_rss_mb"] for r in fx),
            "server_rss_after_report_mb": statistics.median(r["server_rss_after_report_mb"] for r in fx),
            "raw_export_dynamic_peak_rss_mb": max(r["peak_rss_mb"] for r in dynamic),
            "top_class_nodes": fx[-1]["top_class_nodes"],
            "all_nodes": fx[-1]["all_nodes"],
            "raw_export_nodes": {"dynamic": dynamic[-1]["nodes"], "static": static[-1]["nodes"]},
        }
    return results


if __name__ == "__main__":
    if sys.argv[1] == "fxlens":
        print(json.dumps(asyncio.run(probe_fxlens(sys.argv[2], Path(sys.argv[3])))))
    else:
        raise SystemExit("usage: scale.py fxlens MODEL_KEY FOLDER")

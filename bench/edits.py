"""Edit → fresh result, and cold start, each beside raw torch tracing the same text in the same run.

The edit baseline traces every class of the file: a user without fxlens has nothing telling which
classes an edit spared (fxlens re-traces only those whose fingerprint changed; the table says how many).
Beside it, raw torch tracing only the classes fxlens traced again: the like-for-like comparison.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lsp_session import FXLENS_COMMAND, ROOT, Session
from specs import BENCH, MODELS

sys.path.insert(0, str(ROOT / "server"))
from fxlens.engine.scheduler import DEBOUNCE_SECONDS

RAW_TORCH = [sys.executable, str(BENCH / "raw_torch.py")]


class WarmTorch:
    """A warm raw-torch process (torch imported, export warmed up) answering trace requests."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [*RAW_TORCH, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert json.loads(self.process.stdout.readline())["ready"]

    def trace(self, model: str, path: Path, text: str, classes: list[str] | None) -> dict:
        self.process.stdin.write(
            json.dumps({"model": model, "path": str(path), "text": text, "classes": classes}) + "\n"
        )
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


async def edit_to_result(folder: Path, rounds: int, models: tuple[str, ...] = ("small", "gpt2-12")) -> dict:
    """didChange → the fxlens/reportChanged (complete) and publishDiagnostics of the new version."""
    torch = await asyncio.to_thread(WarmTorch)
    session = Session(FXLENS_COMMAND)
    await session.start(folder)
    results = {}
    try:
        await session.worker_ready()
        for key in models:
            spec = MODELS[key]
            path = spec.materialise(folder)
            doc = session.open(path)
            await session.report_complete(doc)
            titles = await _lens_titles(session, doc.uri)
            fxlens, diagnostics, lenses, raw, raw_same, traced = [], [], [], [], [], []
            for _ in range(rounds):  # taking turns: machine noise falls on both sides alike
                text = spec.edited(doc.text)
                sent = session.change(doc, text)
                report = await session.report_complete(doc, after=sent)
                # the diagnostics published with the complete report (the ones sent as the trace
                # starts carry the new version too, but are the old ones shifted to the new text)
                published = [
                    e
                    for e in session.events
                    if sent <= e.at <= report.at
                    and e.params.get("uri") == doc.uri
                    and e.method == "textDocument/publishDiagnostics"
                ]
                # what an editor does on workspace/codeLens/refresh: ask again, and show the new counts
                fresh_titles = await _lens_titles(session, doc.uri)
                lenses.append(time.perf_counter() - sent)
                assert fresh_titles != titles, f"{key}: the lenses did not change with the edit"
                titles = fresh_titles
                fxlens.append(report.at - sent)
                diagnostics.append(published[-1].at - sent)
                info = await session.execute("fxlens.debugInfo")
                traced.append(_value(info, "retraced").get(doc.uri))
                kept = _value(info, "unchanged").get(doc.uri) or []
                # every class (without fxlens nothing tells which ones an edit spared), then like for like
                for classes, times in ((None, raw), (traced[-1], raw_same)):
                    # each trace starts, as fxlens's does after the debounce, from a process idle that long
                    # (a process that just ran is faster: its CPU caches are hot)
                    await asyncio.sleep(DEBOUNCE_SECONDS)
                    times.append((await asyncio.to_thread(torch.trace, key, path, text, classes))["seconds"])
            fx_median, raw_median = statistics.median(fxlens), statistics.median(raw)
            same_median = statistics.median(raw_same)
            results[key] = {
                "file": path.name,
                "rounds": rounds,
                "fxlens_s": fxlens,
                "diagnostics_s": diagnostics,
                "lens_s": lenses,
                "median_lens_s": statistics.median(lenses),
                "raw_torch_s": raw,
                "classes_traced": traced[-1],
                "classes_kept": kept,
                "raw_torch_same_classes_s": raw_same,
                "median_raw_torch_same_classes_s": same_median,
                "ratio_same_classes_without_debounce": (fx_median - DEBOUNCE_SECONDS) / same_median,
                "target_same_classes_s": 1.3 * same_median + DEBOUNCE_SECONDS,
                "median_fxlens_s": fx_median,
                "median_raw_torch_s": raw_median,
                "debounce_s": DEBOUNCE_SECONDS,
                "ratio": fx_median / raw_median,
                "ratio_without_debounce": (fx_median - DEBOUNCE_SECONDS) / raw_median,
                "target_s": 1.3 * raw_median + DEBOUNCE_SECONDS,
            }
    finally:
        await session.stop()
        torch.close()
    return results


async def _lens_titles(session: Session, uri: str) -> list[str]:
    lenses = await session.client.text_document_code_lens_async(_lens_params(uri))
    return [lens.command.title for lens in lenses or []]


def _value(params, key):
    return params.get(key) if isinstance(params, dict) else getattr(params, key, None)


async def _cold_fxlens(folder: Path) -> dict:
    path = MODELS["small"].materialise(folder)
    session = Session(FXLENS_COMMAND)
    launched = await session.start(folder)
    try:
        doc = session.open(path)
        await session.report_complete(doc)
        lenses = await session.client.text_document_code_lens_async(_lens_params(doc.uri))
        seconds = time.perf_counter() - launched
        assert lenses, "fxlens gave no lens on the cold file"
    finally:
        await session.stop()
    return {"seconds": seconds, "lenses": len(lenses)}


def _lens_params(uri: str):
    from lsprotocol import types

    return types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


async def cold_start(folder: Path, runs: int) -> dict:
    """Server start → first lens on the small file; beside `python -c "import torch"` and import + trace."""
    fxlens, import_torch, import_and_trace = [], [], []
    for run in range(runs):
        run_folder = folder / f"cold{run}"
        run_folder.mkdir(exist_ok=True)
        fxlens.append((await _cold_fxlens(run_folder))["seconds"])
        import_torch.append(await asyncio.to_thread(_wall, [sys.executable, "-c", "import torch"]))
        import_and_trace.append(await asyncio.to_thread(_wall, [*RAW_TORCH, "once", "small"]))
    medians = {
        name: statistics.median(values)
        for name, values in (
            ("fxlens", fxlens),
            ("import_torch", import_torch),
            ("import_torch_and_trace", import_and_trace),
        )
    }
    return {
        "runs": runs,
        "fxlens_s": fxlens,
        "import_torch_s": import_torch,
        "import_torch_and_trace_s": import_and_trace,
        **{f"median_{k}_s": v for k, v in medians.items()},
        "ratio": medians["fxlens"] / medians["import_torch_and_trace"],
    }

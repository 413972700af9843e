"""The dynamo level's cost against raw `torch._dynamo.explain` on the same module, one process, medians
(issue 12: within 1.3x).

    python bench/dynamo.py [MODEL_KEY] [--runs N]     # default gpt2-12, 5 runs

The level runs as a trace runs it, after the class's fx level (untimed), whose findings say whether the
forward reads values. Rows: `MODEL_KEY` = the level on the meta-built model (nothing reads a value: it
runs on meta tensors) vs explain on the same meta model and inputs; `break` = the test fixture's Gate
(`if y.sum() > 0:`), where the fx level found the forward reading a value, so the level runs on small
real CPU tensors at once, vs explain on the CPU-built module (what a user would run).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "server")]
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from fxlens.report import Build  # noqa: E402
from fxlens.worker.construction.build import Example  # noqa: E402
from fxlens.worker.failures.classify import whole_line  # noqa: E402
from fxlens.worker.levels.table import TABLE, ClassContext  # noqa: E402
from raw_torch import load  # noqa: E402
from specs import MODELS  # noqa: E402
from timing import median_seconds  # noqa: E402

BREAKS = BENCH.parent / "tests" / "fixtures" / "dynamo" / "breaks.py"


def _row(path: str, text: str, instance, inputs, raw_instance, raw_inputs, runs: int) -> dict:
    lines = text.splitlines()
    span = whole_line(1, lines)

    example = Example(instance, Build(), inputs=inputs)
    context = ClassContext(("fx", "dynamo"))
    TABLE["fx"](example, path, lines, span, context)  # as a trace runs it: after the fx level (untimed)

    def level():
        result = TABLE["dynamo"](Example(instance, Build(), inputs=inputs), path, lines, span, context)
        assert result.ok, result.diagnostics
        return result

    def raw():
        return torch._dynamo.explain(raw_instance)(*raw_inputs)

    found, explained = level(), raw()  # warm both alike
    fxlens_s, raw_s = median_seconds(level, runs), median_seconds(raw, runs)
    return {
        "fxlens_s": round(fxlens_s, 3),
        "raw_s": round(raw_s, 3),
        "ratio": round(fxlens_s / raw_s, 2),
        "graphs": [found.graphs, explained.graph_count],
        "breaks": [found.breaks, len(explained.break_reasons)],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="gpt2-12")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    rows = {}
    spec = MODELS[args.model]
    path = str(BENCH / "models" / (spec.file_name or spec.source.name))
    text = spec.text()
    module = load(path, text)
    with torch.device("meta"):
        instance = eval(spec.build, vars(module))
        inputs = eval(spec.inputs, {**vars(module), "torch": torch})
    rows[args.model] = _row(path, text, instance, inputs, instance, inputs, args.runs)
    text = BREAKS.read_text()
    fixture = load(str(BREAKS), text)
    with torch.device("meta"):
        gate = fixture.Gate()
    rows["break"] = _row(
        str(BREAKS), text, gate, (torch.empty(2, 3, device="meta"),), fixture.Gate(), (torch.randn(2, 3),), args.runs
    )
    print(json.dumps({"runs": args.runs, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

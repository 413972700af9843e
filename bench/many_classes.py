"""One file of many classes, traced in one process by two checkouts taking turns: what a file's size costs
each class. The file is made here: N classes, each with a helper and a global before it and a forward of
L lines (9,302 lines at the defaults), traced at the fx level as `fxlens check` asks.

    python3 bench/many_classes.py BASE_SERVER_DIR [NEW_SERVER_DIR] [--classes N] [--lines L] [--rounds R]

e.g. `git worktree add /tmp/base <rev>` and `python3 bench/many_classes.py /tmp/base/server`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ONE_RUN = """
import sys, time
sys.path.insert(0, sys.argv[1])
from fxlens.messages import TraceRequest
from fxlens.worker.analysis.analyse import Analysis
text = open(sys.argv[2]).read()
started = time.perf_counter()
Analysis(TraceRequest(sys.argv[2], text=text, levels=["fx"], cost=False, surface="check")).run(lambda event: None)
print(time.perf_counter() - started)
"""


def many_classes(classes: int, lines: int) -> str:
    parts = ["import torch\nfrom torch import nn\n"]
    for i in range(classes):
        body = "".join(f"        x = x + {j}\n" for j in range(lines))
        parts.append(
            f"\nSCALE_{i} = {i}\n\n\ndef helper_{i}(x):\n    return x * SCALE_{i}\n\n\n"
            f"class Layer{i}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n{body}"
            f"        return helper_{i}(self.fc(x))\n"
        )
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("new", nargs="?", default=str(ROOT / "server"))
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--lines", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "many_classes.py"
        text = many_classes(args.classes, args.lines)
        path.write_text(text)
        lines = text.count("\n")
        times: dict[str, list[float]] = {args.base: [], args.new: []}
        for _ in range(args.rounds):  # taking turns: the machine's noise falls on both alike
            for server in times:
                done = subprocess.run(
                    [sys.executable, "-c", _ONE_RUN, server, str(path)], capture_output=True, text=True, check=True
                )
                times[server].append(float(done.stdout.split()[-1]))
    medians = {server: statistics.median(values) for server, values in times.items()}
    print(
        json.dumps(
            {
                "lines": lines,
                "classes": args.classes,
                "median_s": medians,
                "ratio_new_to_base": medians[args.new] / medians[args.base],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

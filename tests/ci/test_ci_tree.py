"""`fxlens check FOLDER -j 2` over a 30-file package: the same findings as tracing each file alone, and
a second run served from the cache (the summary says what was traced again), an edit of an imported
module re-tracing its importers only."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from fxlens.ci.findings import findings
from fxlens.ci.formats import json_document
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens_command import fxlens

BLOCK = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x
"""

MODEL = """import torch
from torch import nn

from .blocks import Block


# fxlens: Model{i}()(torch.randn(2, 8))
class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range({depth})])

    def forward(self, x):
        y = self.blocks(x)
{branch}        return y * {i}
"""
BRANCH = "        if y.sum() > 0:\n            y = -y\n"


def _tree(root: Path) -> None:
    package = root / "zoo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "blocks.py").write_text(BLOCK)
    (package / "helpers.py").write_text("def double(x):\n    return 2 * x\n")  # no Module: not checked
    for i in range(29):
        branch = BRANCH if i % 6 == 0 else ""
        (package / f"model_{i:02d}.py").write_text(MODEL.format(i=i, depth=1 + i % 3, branch=branch))
    (root / "scratch").mkdir()
    (root / "scratch" / "old_model.py").write_text(MODEL.format(i=99, depth=1, branch=BRANCH))
    (root / ".gitignore").write_text("scratch/\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "third.py").write_text(MODEL.format(i=98, depth=1, branch=BRANCH))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def _check(root: Path, cache: Path) -> dict:
    run = fxlens(
        "check",
        ".",
        "--level",
        "fx",
        "-j",
        "2",
        "--exclude",
        "vendor",
        "--format",
        "json",
        "--cache-dir",
        str(cache),
        cwd=root,
    )
    assert run.returncode == 1, run.stderr  # five models branch on data
    return json.loads(run.stdout)


async def _each_alone(root: Path, files: list[str]) -> list[dict]:
    client = WorkerClient()
    await client.start()
    try:
        found = []
        for name in files:
            path = root / name
            report = await client.analyse(str(path), path.read_text(), TraceOptions(levels=("fx",)), roots=[str(root)])
            # (one finding per cause, as `fxlens check` gives them: render/causes.py)
            found += json_document(findings(name, report.all_diagnostics(), path.read_text().split("\n")), {})[
                "diagnostics"
            ]
        return found
    finally:
        await client.stop()


def test_tree_check_equals_per_file_results_and_is_served_from_the_cache(tmp_path):
    root, cache = tmp_path / "repo", tmp_path / "cache"
    root.mkdir()
    _tree(root)
    first = _check(root, cache)
    checked = sorted({d["path"] for d in first["diagnostics"]})
    assert first["summary"]["files"] == 30 and first["summary"]["traced"] == 30
    assert not any(p.startswith(("scratch", "vendor")) or p.endswith("helpers.py") for p in checked)
    errors = [d for d in first["diagnostics"] if d["severity"] == "error"]
    assert sorted(d["path"] for d in errors) == [f"zoo/model_{i:02d}.py" for i in range(0, 29, 6)]
    assert all(d["category"] == "data-dependent-control-flow" and d["line"] == 15 for d in errors)

    files = ["zoo/blocks.py", *[f"zoo/model_{i:02d}.py" for i in range(29)]]
    alone = asyncio.run(_each_alone(root, files))
    assert sorted(first["diagnostics"], key=json.dumps) == sorted(alone, key=json.dumps)

    second = _check(root, cache)
    assert (second["summary"]["traced"], second["summary"]["cached"]) == (0, 30)
    assert second["diagnostics"] == first["diagnostics"]

    # the block every model imports: all of them trace again; a model's own edit: that model only
    (root / "zoo" / "blocks.py").write_text(BLOCK.replace("+ x", "- x"))
    assert _check(root, cache)["summary"]["traced"] == 30
    model = root / "zoo" / "model_01.py"
    model.write_text(model.read_text().replace("y * 1", "y * 11"))
    assert _check(root, cache)["summary"]["traced"] == 1

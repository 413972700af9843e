"""`fxlens ...` as a user runs it: a process of its own, from this repository's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fxlens(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "server"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "fxlens", *args], capture_output=True, text=True, cwd=cwd, env=environment, timeout=300
    )

"""A reference run in a fresh interpreter (raw torch, no fxlens), started before fxlens traces the same modules
and read after: the two take a core each instead of one after the other. Its output goes to files, not pipes:
nothing reads a pipe while fxlens traces, and a full one would stop the run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


class BackgroundRun:
    def __init__(self, command: list[str], folder: Path, timeout: float, env: dict[str, str] | None = None) -> None:
        self.timeout = timeout
        self.stdout, self.stderr = folder / "stdout", folder / "stderr"
        with self.stdout.open("w") as stdout, self.stderr.open("w") as stderr:
            self.process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)

    def json(self) -> Any:
        """What the run printed, read as JSON once it has exited (asserting it exited well)."""
        code = self.process.wait(timeout=self.timeout)
        assert code == 0, self.stderr.read_text()[-3000:]
        return json.loads(self.stdout.read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

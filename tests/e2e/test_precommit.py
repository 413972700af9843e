"""A real `pre-commit run` in a throwaway git repository using this repository's hook
(.pre-commit-hooks.yaml, `language: python`: pre-commit builds its own environment with fxlens in it):
refused on a data-dependent branch, accepted once the branch is `torch.where`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = """import torch
from torch import nn


# fxlens: Gate()(torch.randn(4, 8))
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
{body}
"""
BRANCH = "        if y.sum() > 0:\n            return y\n        return -y"
WHERE = "        return torch.where(y.sum() > 0, y, -y)"


def _hook_source(tmp: Path) -> tuple[str, str]:
    """This repository at a commit pre-commit can clone: HEAD plus the working tree's hook and code
    (so the test checks what is being changed, committed or not)."""
    source = tmp / "fxlens-src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            "node_modules",
            "*.vsix",
            "__pycache__",
            "*.egg-info",
            "build",
            "dist",
            "bench",
            "tests",
            "vscode-client",
        ),
    )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "ci",
        "GIT_AUTHOR_EMAIL": "ci@example.com",
        "GIT_COMMITTER_NAME": "ci",
        "GIT_COMMITTER_EMAIL": "ci@example.com",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fxlens"]):
        subprocess.run(["git", *args], cwd=source, check=True, capture_output=True, env=env)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, check=True, capture_output=True, text=True
    ).stdout.strip()
    return str(source), rev


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_refuses_a_data_dependent_branch_and_accepts_the_fix(tmp_path):
    source, rev = _hook_source(tmp_path)
    repo = tmp_path / "project"
    repo.mkdir()
    # the worker runs in an interpreter that has torch (the hook's own environment does not: see README)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n      - id: fxlens-check\n"
        f"        args: [--python, {sys.executable}]\n"
    )
    (repo / "gate.py").write_text(MODEL.format(body=BRANCH))
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "FXLENS_CACHE_DIR": str(tmp_path / "fxlens-cache"),
        "GIT_AUTHOR_NAME": "ci",
        "GIT_AUTHOR_EMAIL": "ci@example.com",
        "GIT_COMMITTER_NAME": "ci",
        "GIT_COMMITTER_EMAIL": "ci@example.com",
    }
    env.pop("PYTHONPATH", None)  # the hook's environment must bring its own fxlens

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", *args], cwd=repo, capture_output=True, text=True, env=env, timeout=900
        )

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    refused = run("run", "--files", "gate.py")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "gate.py:13:12: error:" in refused.stdout and "[data-dependent-control-flow]" in refused.stdout

    (repo / "gate.py").write_text(MODEL.format(body=WHERE))
    accepted = run("run", "--files", "gate.py")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "fxlens check" in accepted.stdout and "Passed" in accepted.stdout

"""The README's two set-up commands, as a newcomer runs them: in a clean clone of this repository, command 1
makes a fresh virtual environment, installs into it and prints the example's graph; command 2 (`bash .ci/run`)
then runs in that same environment.

Command 2 runs the whole suite, which this test is part of (about 22 minutes on 2 cores): here it runs every
set-up step of .ci/run and then a small selection of the tests (.ci/run passes its arguments to pytest),
among them the two that failed in a fresh venv before (issue 24: the packaging tests' fresh environments saw
the base interpreter's site, without torch). torch comes from the CPU wheel on local disk (pinned in
requirements-ci.txt): where pip cannot install it without the network, the test is skipped rather than
download a several-GB CUDA build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# command 2's selection: the tests that need the environment to be right (a fresh venv inside the venv,
# pipx, the worker in the venv's interpreter, the language server tracing through it), and a pure one. One test
# of each: the rest of their files run in the suite this test is part of, on the same machine at the same time
SELECTION = [
    "tests/e2e/test_packaging.py::test_wheel_in_a_fresh_venv_gives_a_working_fxlens",
    "tests/e2e/test_packaging.py::test_pipx_install_gives_a_working_fxlens",
    "tests/worker/process/test_hostile.py::test_good_text_traces",
    "tests/e2e/test_lsp_features.py::test_lenses_on_each_class",
    "tests/shared/test_line_model.py",
]

pytestmark = pytest.mark.slow


def readme_commands() -> list[str]:
    """The commands of the README's "Set-up, two commands" block, comments left out."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up, two commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _torch_pin() -> str:
    return next(
        line.strip() for line in (ROOT / "requirements-ci.txt").read_text().splitlines() if line.startswith("torch==")
    )


def _torch_is_on_local_disk() -> bool:
    """Whether pip resolves the pinned torch from files on this machine (find-links, a file:// index)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--no-index",
            "--quiet",
            _torch_pin(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode == 0


def _newcomer_env(home: Path) -> dict[str, str]:
    """This machine's environment without what the test run set: no PYTHONPATH, no active venv, no pytest."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("PYTEST")
    }
    if sys.prefix != sys.base_prefix:  # the tests run in a venv: a newcomer's shell has not activated it
        bin_dir = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
    env["PIP_NO_INPUT"] = "1"
    env["FXLENS_CACHE_DIR"] = str(home / "fxlens-cache")
    return env


def _seed_node_modules(clone: Path) -> None:
    """The npm packages command 2's set-up would install, copied from this checkout when its lockfile is the
    clone's (the set-up scripts then skip `npm ci`, as on any second run). They are the same files `npm ci`
    installs from that lockfile, and nothing in them depends on the Python environment this test is about;
    `npm ci` itself runs in .ci/run's own clean clone."""
    for folder in ("vscode-client", ".ci/sarif-schema"):
        mine, theirs = ROOT / folder / "node_modules", clone / folder / "node_modules"
        marker = mine / ".fxlens-lock-hash"
        same_lock = (ROOT / folder / "package-lock.json").read_bytes() == (
            clone / folder / "package-lock.json"
        ).read_bytes()
        if marker.exists() and same_lock and not theirs.exists():
            shutil.copytree(mine, theirs, symlinks=True)


def test_the_readme_commands_are_the_two_set_up_commands():
    first, second = readme_commands()
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements-ci.txt")
    assert first.endswith("fxlens graph examples/residual_mlp.py")
    assert second == "bash .ci/run"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a repository")
def test_both_readme_commands_in_a_fresh_venv_from_a_clean_clone(tmp_path):
    if not _torch_is_on_local_disk():
        pytest.skip(f"{_torch_pin()} is not on local disk: a fresh venv would download it")
    first, second = readme_commands()
    clone = tmp_path / "fxlens"
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, capture_output=True, timeout=300)
        env = _newcomer_env(tmp_path)
        one = subprocess.run(["bash", "-c", first], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
        assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-5000:]
        assert "== ResidualMLP (fx)" in one.stdout
        assert "%stem : [num_users=2] = call_module[target=stem](args = (%x,), kwargs = {})" in one.stdout
        venv_python = clone / ".venv" / "bin" / "python"
        where = subprocess.run(
            [str(venv_python), "-c", "import fxlens, torch; print(fxlens.__file__, torch.__file__)"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert where.split()[0].startswith(str(clone / "server")) and where.split()[1].startswith(str(clone / ".venv"))
        _seed_node_modules(clone)
        # command 2 in the same shell, the environment still active, on the selection
        two = subprocess.run(
            ["bash", "-c", f". .venv/bin/activate && {second} {' '.join(SELECTION)}"],
            cwd=clone,
            env={**env, "CI": "true"},
            capture_output=True,
            text=True,
            timeout=3600,
            stdin=subprocess.DEVNULL,
        )
        assert two.returncode == 0, two.stdout[-5000:] + two.stderr[-3000:]
        closing = two.stdout.strip().splitlines()[-1]
        assert re.search(r"\b\d+ passed\b", closing) and "failed" not in closing and "error" not in closing, closing
    finally:
        shutil.rmtree(clone, ignore_errors=True)  # the venv holds torch: ~1 GB

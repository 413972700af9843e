"""The Python package as a user installs it: `python -m build` gives a wheel and an sdist with complete
metadata; the wheel installed in a fresh virtual environment (torch seen from the system site, never
fetched) gives a working `fxlens`."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "residual_mlp.py"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_wheel_and_sdist_carry_complete_metadata(dist):
    (wheel,) = dist.glob("fxlens-*.whl")
    (sdist,) = dist.glob("fxlens-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(name))
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist())
        assert (
            "fxlens/ci/check.py" in archive.namelist()
            and "fxlens/worker/__main__.py" in archive.namelist()
            and "fxlens/worker/levels/table.py" in archive.namelist()
        )
    assert metadata["License-Expression"] == "MIT"
    assert (
        metadata["Description-Content-Type"] == "text/markdown" and "## Set-up, two commands" in metadata.get_payload()
    )
    assert "torch" in metadata.get_all("Provides-Extra")
    assert any(r.startswith("torch") and 'extra == "torch"' in r for r in metadata.get_all("Requires-Dist"))
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert {"Homepage", "Repository", "Issues"} <= urls.keys()
    classifiers = metadata.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers and any(
        c.startswith("Topic ::") for c in classifiers
    )
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"README.md", "LICENSE", "pyproject.toml", "server/fxlens/cli/__init__.py"} <= names


def _see_the_running_site(env_python: Path) -> None:
    """Give a fresh environment this interpreter's packages (torch). `--system-site-packages` gives it the
    base interpreter's site, which lacks them when the tests themselves run in a virtual environment."""
    if sys.prefix == sys.base_prefix:
        return  # the system site is this interpreter's own
    site = subprocess.run(
        [str(env_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "fxlens_tests_running_site.pth").write_text("\n".join(paths) + "\n")


def test_wheel_in_a_fresh_venv_gives_a_working_fxlens(dist, tmp_path):
    (wheel,) = dist.glob("fxlens-*.whl")
    venv = tmp_path / "venv"
    # the system site provides torch (2.13 CPU, as installed for the tests): pip must never fetch it
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    _see_the_running_site(python)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True, text=True, timeout=900
    )
    assert install.returncode == 0, install.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import fxlens; print(fxlens.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert where.startswith(str(venv))  # the installed wheel, not this checkout
    run = subprocess.run(
        [str(venv / "bin" / "fxlens"), "graph", str(EXAMPLE), "--class", "ResidualMLP", "--level", "fx"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "%stem : [num_users=2] = call_module[target=stem](args = (%x,), kwargs = {})" in run.stdout


def test_pipx_install_gives_a_working_fxlens(dist, tmp_path):
    """`pipx install --system-site-packages fxlens`: the command alone, in pipx's own environment."""
    (wheel,) = dist.glob("fxlens-*.whl")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"), PIPX_MAN_DIR=str(tmp_path / "man"))
    install = subprocess.run(
        [sys.executable, "-m", "pipx", "install", "--system-site-packages", str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]
    _see_the_running_site(next((tmp_path / "pipx" / "venvs").glob("fxlens*")) / "bin" / "python")
    run = subprocess.run(
        [str(tmp_path / "bin" / "fxlens"), "graph", str(EXAMPLE), "--class", "ResidualMLP", "--level", "fx"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "%stem : [num_users=2] = call_module[target=stem](args = (%x,), kwargs = {})" in run.stdout

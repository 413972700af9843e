"""The VS Code extension's own test suites, run from pytest so that `python3 -m pytest` covers them.

- unit tests of the pure TypeScript parts (node's test runner);
- the graph page in headless Chromium, fed a report the engine produces here;
- fxlens in a real VS Code (code-server 4.100.3) with the packaged .vsix.

Prerequisites come from `.ci/setup-vscode.sh`; a missing one fails with the command that installs it.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "vscode-client"
VSIX = CLIENT / "fxlens.vsix"
SETUP = "bash .ci/setup-vscode.sh"
# Sources a .vsix is built from: when one is newer, the package is rebuilt before code-server uses it.
PACKAGED_SOURCES = [CLIENT / "src", CLIENT / "webview", CLIENT / "package.json", ROOT / "server" / "fxlens"]


def _require(condition: bool, what: str) -> None:
    if not condition:
        pytest.fail(f"{what} is missing; run: {SETUP}", pytrace=False)


@pytest.fixture(scope="module")
def npm() -> str:
    path = shutil.which("npm")
    _require(path is not None, "npm (Node 20)")
    _require((CLIENT / "node_modules" / ".bin" / "esbuild").exists(), "vscode-client/node_modules")
    return path


def _run(npm: str, script: str, timeout: float = 600) -> None:
    env = {**os.environ, "FXLENS_TEST_PYTHON": sys.executable}
    # Its own process group, so that a run past the timeout is stopped with everything it started
    # (code-server, Chromium, the fxlens server and worker).
    process = subprocess.Popen([npm, "run", script], cwd=CLIENT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        stdout, stderr = process.communicate()
        pytest.fail(f"`npm run {script}` ran over {timeout:.0f} s and was stopped:\n{stdout[-12000:]}\n{stderr[-4000:]}",
                    pytrace=False)
    if process.returncode != 0:
        pytest.fail(f"`npm run {script}` failed ({process.returncode}):\n{stdout[-12000:]}\n{stderr[-4000:]}",
                    pytrace=False)


def _newest_source_mtime() -> float:
    newest = 0.0
    for source in PACKAGED_SOURCES:
        files = [source] if source.is_file() else [p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        newest = max([newest, *(p.stat().st_mtime for p in files)])
    return newest


def test_typescript_unit_tests(npm: str) -> None:
    _run(npm, "test")


def test_graph_page_in_chromium(npm: str) -> None:
    _require(Path("/usr/bin/chromium").exists(), "Debian's chromium")
    _run(npm, "test:webview")


def test_fxlens_in_code_server(npm: str) -> None:
    """Lenses, a hover, a diagnostic and the drawn graph in code-server with the packaged .vsix."""
    code_server = Path(os.environ.get("FXLENS_CODE_SERVER", Path.home() / ".cache/fxlens/code-server-4.100.3/node_modules/.bin/code-server"))
    _require(code_server.exists(), f"code-server 4.100.3 ({code_server})")
    _require(Path("/usr/bin/chromium").exists(), "Debian's chromium")
    if not VSIX.exists() or VSIX.stat().st_mtime < _newest_source_mtime():
        _run(npm, "package")
    _run(npm, "test:code-server")

"""The VS Code extension's own test suites, run from pytest so that `python3 -m pytest` covers them.

- unit tests of the pure TypeScript parts (node's test runner);
- the graph page in headless Chromium, fed a report the engine produces here;
- fxlens in a real VS Code (code-server 4.100.3) with the packaged .vsix;
- the .vsix's server in a bare interpreter: its dependencies are all bundled.

Prerequisites come from `.ci/setup-vscode.sh`; a missing one fails with the command that installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
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
    process = subprocess.Popen(
        [npm, "run", script],
        cwd=CLIENT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        stdout, stderr = process.communicate()
        pytest.fail(
            f"`npm run {script}` ran over {timeout:.0f} s and was stopped:\n{stdout[-12000:]}\n{stderr[-4000:]}",
            pytrace=False,
        )
    if process.returncode != 0:
        # the whole output, for a failure whose cause scrolled out of the tail shown here
        log = CLIENT / "test-artifacts" / f"{script.replace(':', '-')}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(stdout + "\n--- stderr ---\n" + stderr)
        pytest.fail(
            f"`npm run {script}` failed ({process.returncode}); full output in {log}:\n"
            f"{stdout[-12000:]}\n{stderr[-4000:]}",
            pytrace=False,
        )


def _newest_source_mtime() -> float:
    newest = 0.0
    for source in PACKAGED_SOURCES:
        files = (
            [source]
            if source.is_file()
            else [p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        )
        newest = max([newest, *(p.stat().st_mtime for p in files)])
    return newest


def test_typescript_unit_tests(npm: str) -> None:
    _run(npm, "test")


def test_graph_page_in_chromium(npm: str) -> None:
    _require(Path("/usr/bin/chromium").exists(), "Debian's chromium")
    _run(npm, "test:webview")


def test_fxlens_in_code_server(npm: str) -> None:
    """Lenses, a hover, a diagnostic and the drawn graph in code-server with the packaged .vsix."""
    code_server = Path(
        os.environ.get(
            "FXLENS_CODE_SERVER", Path.home() / ".cache/fxlens/code-server-4.100.3/node_modules/.bin/code-server"
        )
    )
    _require(code_server.exists(), f"code-server 4.100.3 ({code_server})")
    _require(Path("/usr/bin/chromium").exists(), "Debian's chromium")
    if not VSIX.exists() or VSIX.stat().st_mtime < _newest_source_mtime():
        _run(npm, "package")
    _run(npm, "test:code-server")


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read_lsp_message(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def test_vsix_server_runs_with_nothing_but_python(npm: str, tmp_path: Path) -> None:
    """The .vsix carries the server and every dependency it imports: in a bare venv (no pygls, no
    lsprotocol, no cattrs, no torch) `python -m fxlens serve --stdio` answers `initialize`."""
    if not VSIX.exists() or VSIX.stat().st_mtime < _newest_source_mtime():
        _run(npm, "package")
    with zipfile.ZipFile(VSIX) as package:
        package.extractall(tmp_path / "vsix")
    libs = tmp_path / "vsix" / "extension" / "bundled" / "libs"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(libs)
    bare = subprocess.run(
        [python, "-c", "import importlib.util as u; print([m for m in ('pygls', 'torch') if u.find_spec(m)])"],
        env={**env, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert bare.stdout.strip() == "[]", "the venv must have neither pygls nor torch of its own"

    server = subprocess.Popen(
        [python, "-m", "fxlens", "serve", "--stdio"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        server.stdin.write(
            _lsp_message(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "processId": os.getpid(),
                        "rootUri": None,
                        "capabilities": {},
                        "initializationOptions": {"fxlens": {"python": python, "execution": "off"}},
                    },
                }
            )
        )
        server.stdin.flush()
        while True:
            message = _read_lsp_message(server.stdout)
            if message.get("id") == 1:
                break
        assert "result" in message, message
        capabilities = message["result"]["capabilities"]
        assert capabilities.get("hoverProvider") and capabilities.get("codeLensProvider")
        assert "fxlens.showGraph" in capabilities["executeCommandProvider"]["commands"]
        for payload in ({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}):
            server.stdin.write(_lsp_message(payload))
        server.stdin.flush()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()

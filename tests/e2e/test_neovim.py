"""A real editor: Debian's Neovim 0.7.2, headless, configured with the README's snippet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "editors" / "neovim" / "fxlens.lua"


@pytest.fixture
def neovim_env(tmp_path):
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed (.ci/setup-neovim.sh installs it)")
    env = dict(os.environ)
    for name in ("CONFIG", "DATA", "STATE", "CACHE", "RUNTIME"):
        folder = tmp_path / f"xdg-{name.lower()}"
        folder.mkdir()
        env[f"XDG_{name}_HOME" if name != "RUNTIME" else "XDG_RUNTIME_DIR"] = str(folder)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "server"), env.get("PYTHONPATH")]))
    return nvim, env


def test_hover_lenses_and_diagnostics_in_neovim(neovim_env, tmp_path):
    nvim, env = neovim_env
    source = tmp_path / "residual_mlp.py"
    shutil.copy(ROOT / "tests" / "fixtures" / "lsp" / "residual_mlp.py", source)
    out = tmp_path / "seen.json"
    env.update(
        FXLENS_OUT=str(out),
        FXLENS_SNIPPET=str(SNIPPET),
        FXLENS_FILE=str(source),
        FXLENS_CMD=json.dumps([sys.executable, "-m", "fxlens", "serve", "--stdio"]),
    )
    driver = ROOT / "tests" / "e2e" / "neovim_driver.lua"
    # the timeout is a guard against a hang, not a measurement
    subprocess.run(
        [nvim, "--headless", "--clean", "-c", f"luafile {driver}"],
        env=env,
        cwd=tmp_path,
        timeout=480,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    seen = json.loads(out.read_text())
    assert seen["errors"] == [] and seen["attached"] and seen["traced"] and seen["hover_key"]
    assert any(d["lnum"] == 31 and "did not run" in d["message"] for d in seen["diagnostics"])
    assert "call_module fc" in seen["hover"] and "aten.linear.default" in seen["hover"]
    assert "×2 in ResidualMLP: blocks.0 … blocks.1" in seen["hover"]
    titles = {(lens["line"], lens["title"]) for lens in seen["lenses"]}
    assert any(line == 5 and title.startswith("fx 7 · aten 9") for line, title in titles), titles
    assert (
        any(line == 17 and title.startswith("fx 15 · aten 23") for line, title in titles)
        and (17, "Show graph") in titles
    )
    assert seen["graph_buffer"].endswith("residual_mlp.ResidualMLP.fx.txt")
    assert "== ResidualMLP (fx)" in seen["graph_text"] and "graph():" in seen["graph_text"]

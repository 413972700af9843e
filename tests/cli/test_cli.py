"""`fxlens graph` and `fxlens check` as a user runs them: output, JSON schema, exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fxlens_command import ROOT, fxlens

MODELS = ROOT / "tests" / "fixtures" / "models"
EXAMPLE = ROOT / "examples" / "residual_mlp.py"


def test_graph_prints_torch_printout_table_and_build():
    run = fxlens("graph", str(EXAMPLE), "--class", "ResidualMLP", "--level", "fx")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "%stem : [num_users=2] = call_module[target=stem](args = (%x,), kwargs = {})" in out
    assert "inputs directive: x: (4, 8) f32" in out
    table_row = next(line for line in out.splitlines() if line.startswith("head "))
    assert table_row.split() == ["head", "call_module", "head", "1", "(4,", "1)", "float32", "29"]


def test_graph_json_is_one_object_with_the_documented_schema():
    run = fxlens("graph", str(MODELS / "seed.py"), "--class", "Seed", "--level", "aten", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert {"class", "level", "ok", "nodes", "diagnostics", "inputs"} <= data.keys()
    assert (data["class"], data["level"], data["ok"]) == ("Seed", "aten", True)
    assert data["inputs"]["source"] == "directive"
    assert data["inputs"]["args"] == [{"name": "x", "shape": [5, 3], "dtype": "float32"}]
    linear = next(n for n in data["nodes"] if n["name"] == "linear")
    for key in ("name", "op", "target", "num_users", "shape", "dtype", "line", "col", "end_line", "end_col"):
        assert key in linear
    assert (linear["op"], linear["target"], linear["num_users"], linear["shape"], linear["line"]) == (
        "call_function",
        "aten.linear.default",
        1,
        [5, 4],
        13,
    )


def test_graph_json_symbolic_sizes_for_inferred_inputs():
    run = fxlens("graph", str(MODELS / "convnet.py"), "--class", "ConvNet", "--level", "fx", "--json")
    data = json.loads(run.stdout)
    assert data["inputs"]["source"] == "inferred"
    assert data["inputs"]["args"][0]["shape"] == ["B", 3, 16, 16]
    assert next(n for n in data["nodes"] if n["name"] == "head")["shape"] == ["B", 10]


def test_graph_of_untraceable_class_shows_the_diagnostic_and_fails():
    run = fxlens("graph", str(MODELS / "failures.py"), "--class", "UsesLen", "--level", "fx")
    assert run.returncode == 1
    assert "failures.py:38:13: error: RuntimeError: 'len' is not supported" in run.stdout
    assert "[builtin-on-proxy]" in run.stdout and "fix:" in run.stdout


def test_check_lists_every_diagnostic_and_exits_1_on_errors():
    run = fxlens("check", str(MODELS / "failures.py"), str(EXAMPLE))
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert any(
        line.startswith("tests/fixtures/models/failures.py:14:12: error:") and "[data-dependent-control-flow]" in line
        for line in lines
    )
    assert any("residual_mlp.py:32:1: hint:" in line for line in lines)  # the __main__ block that did not run


def test_check_of_a_clean_file_exits_0():
    run = fxlens("check", str(MODELS / "seed.py"))
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize(
    "args,expected",
    [
        (["graph", "no/such/file.py"], "no such file: no/such/file.py"),
        (["graph", str(MODELS / "seed.py"), "--class", "Nope"], "no Module class 'Nope'"),
        (["check", "missing.py"], "no such file: missing.py"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(args, expected):
    run = fxlens(*args)
    assert run.returncode == 2
    assert expected in run.stderr


def test_file_without_module_class_exits_2(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\n\ndef f(x):\n    return x + 1\n")
    run = fxlens("graph", str(plain))
    assert run.returncode == 2 and "no nn.Module class" in run.stderr


def test_syntax_error_exits_2_with_its_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x)\n        return x\n")
    run = fxlens("graph", str(broken))
    assert run.returncode == 2
    assert f"syntax error: {broken}:4:" in run.stderr


def test_interpreter_without_torch_says_how_to_fix(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    run = fxlens("graph", str(EXAMPLE), "--python", str(venv / "bin" / "python"))
    assert run.returncode == 2
    assert "torch cannot be imported" in run.stderr and "pip install torch" in run.stderr


def test_prints_and_raw_writes_at_import_do_not_corrupt_the_report(tmp_path):
    noisy = tmp_path / "noisy.py"
    noisy.write_text(
        "import os, sys\nimport torch\nprint('hello from import')\nos.write(1, b'raw bytes\\n')\n"
        "sys.stderr.write('to stderr\\n')\n\n"
        "# fxlens: Noisy()(torch.randn(2, 3))\nclass Noisy(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        print('init')\n"
        "        self.fc = torch.nn.Linear(3, 3)\n\n"
        "    def forward(self, x):\n        print('forward', flush=True)\n"
        '        os.write(1, b\'{"not": "json"}\\n\')\n'
        "        return self.fc(x)\n"
    )
    run = fxlens("graph", str(noisy), "--json", "--class", "Noisy", "--level", "aten")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert [n["target"] for n in data["nodes"] if n["op"] == "call_function"] == ["aten.linear.default"]


def test_top_level_side_effects_and_main_block_do_not_run(tmp_path):
    marker = tmp_path / "marker"
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        f"open({str(marker)!r} + '.call', 'w').close()\n"
        f"for _ in range(1):\n    open({str(marker)!r} + '.loop', 'w').close()\n"
        f"with open({str(marker)!r} + '.with', 'w'):\n    pass\n\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
        f"if __name__ == '__main__':\n    open({str(marker)!r} + '.main', 'w').close()\n"
    )
    run = fxlens("graph", str(script), "--level", "fx")
    assert run.returncode == 0, run.stderr
    assert list(tmp_path.glob("marker*")) == []


def test_graph_backward_json_has_phases_and_saved_values():
    path = ROOT / "tests" / "fixtures" / "backward" / "mlp.py"
    run = fxlens("graph", str(path), "--class", "MLP", "--level", "backward", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["level"] == "backward" and "backward of out.sum()" in data["note"]
    assert {n["phase"] for n in data["nodes"]} == {"forward", "backward"}
    saved = {n["name"]: n["bytes"] for n in data["nodes"] if n["saved"]}
    assert saved["relu"] == 4 * 16 * 4


def test_the_command_line_starts_without_the_language_server_protocol_library():
    # `fxlens graph` and `fxlens check` never build an LSP position; lsprotocol alone costs ~0.5 s per start
    probe = "import sys, fxlens.cli.app; print(sorted(m for m in sys.modules if m.startswith('lsprotocol')))"
    run = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": ""},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"

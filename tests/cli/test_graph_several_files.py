"""`fxlens graph` on several files at once: one worker traces them all, and every class says its file (the
JSON's `file`, the text's `==> FILE <==` headers); a file that cannot be graphed does not hide the others."""

from __future__ import annotations

import json
import subprocess
import sys

from fxlens_command import ROOT, fxlens

RAW_TORCH = ROOT / "tests" / "support" / "raw_torch_nodes.py"
# (path from the repository root, the module raw torch imports, the class with a `# fxlens:` directive)
FILES = [
    ("examples/residual_mlp.py", "residual_mlp", "ResidualMLP"),
    ("tests/fixtures/models/seed.py", "seed", "Seed"),
]


def _raw_torch(path: str, module: str, class_name: str) -> subprocess.Popen:
    """Raw torch's fx and aten rows of the class, imported the ordinary way in an interpreter of its own."""
    request = {"paths": [str((ROOT / path).parent)], "module": module, "class": class_name}
    return subprocess.Popen(
        [sys.executable, "-I", str(RAW_TORCH), json.dumps(request)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _rows(obj: dict) -> list[list]:
    return [[n["name"], n["op"], n["target"], n["num_users"], n["line"], n["shape"], n["dtype"]] for n in obj["nodes"]]


def test_each_class_of_two_files_says_its_file_and_has_raw_torchs_nodes():
    raw = {path: _raw_torch(path, module, name) for path, module, name in FILES}  # beside fxlens's run
    run = fxlens("graph", *(path for path, _, _ in FILES), "--json")
    assert run.returncode == 0, run.stderr
    objects = json.loads(run.stdout)
    # every class of each file, in the order the files were given
    example, seed = (str(ROOT / path) for path, _, _ in FILES)  # (the report's paths are absolute)
    assert [(o["file"], o["class"]) for o in objects if o["level"] == "fx"] == [
        (example, "Residual"),
        (example, "ResidualMLP"),
        (seed, "Seed"),
    ]
    for path, _, name in FILES:
        stdout, stderr = raw[path].communicate(timeout=300)
        assert raw[path].returncode == 0, stderr.decode()
        torch_rows = json.loads(stdout)
        assert torch_rows["file"] == str(ROOT / path)
        for level in ("fx", "aten"):
            (obj,) = [o for o in objects if (o["file"], o["class"], o["level"]) == (str(ROOT / path), name, level)]
            assert _rows(obj) == torch_rows[level], (path, name, level)


def test_the_text_puts_each_files_classes_under_its_name_and_a_bad_file_hides_no_other(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\n\ndef f(x):\n    return x + 1\n")
    seed, example = "tests/fixtures/models/seed.py", "examples/residual_mlp.py"
    run = fxlens("graph", seed, str(plain), example, "--level", "fx")
    assert run.returncode == 2  # the file without a Module class
    assert f"fxlens: no nn.Module class in {plain}" in run.stderr
    heads = [line for line in run.stdout.splitlines() if line.startswith("==")]
    assert [line.split(" — ")[0] for line in heads] == [
        f"==> {ROOT / seed} <==",
        "== Seed (fx)",
        f"==> {ROOT / example} <==",
        "== Residual (fx)",
        "== ResidualMLP (fx)",
    ]
    assert "%fc : [num_users=1] = call_module[target=fc](args = (%x,), kwargs = {})" in run.stdout


def test_a_class_in_one_of_the_files_shows_only_that_file():
    run = fxlens("graph", "tests/fixtures/models/seed.py", "examples/residual_mlp.py", "--class", "Seed", "--json")
    assert run.returncode == 0, run.stderr
    seed = str(ROOT / "tests/fixtures/models/seed.py")
    assert [(o["file"], o["class"], o["level"]) for o in json.loads(run.stdout)] == [
        (seed, "Seed", "fx"),
        (seed, "Seed", "aten"),
    ]


def test_several_classes_show_each_where_it_is_and_one_that_is_nowhere_is_a_usage_error():
    seed, example = "tests/fixtures/models/seed.py", "examples/residual_mlp.py"
    run = fxlens("graph", seed, example, "--class", "ResidualMLP", "--class", "Seed", "--level", "fx", "--json")
    assert run.returncode == 0, run.stderr
    # each file's wanted classes, in the order the files were given (not the order of the flags)
    assert [(o["file"], o["class"]) for o in json.loads(run.stdout)] == [
        (str(ROOT / seed), "Seed"),
        (str(ROOT / example), "ResidualMLP"),
    ]
    missing = fxlens("graph", seed, example, "--class", "Seed", "--class", "Nope", "--level", "fx")
    assert missing.returncode == 2
    assert "fxlens: no Module class 'Nope' in " in missing.stderr and "it has: Residual, ResidualMLP" in missing.stderr
    assert "== Seed (fx)" in missing.stdout  # the classes found are still shown

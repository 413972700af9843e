"""A package `__init__` that fails for its own reason (an optional dependency not installed) does not stop
a file under it from loading: by path when the file imports nothing relatively, through an empty stand-in
package when it does; the file's own failing import is still an error at its line."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from torch_reference import analyse

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "inits"
FILES = {
    "encoder": ROOT / "shop" / "vision" / "encoder.py",
    "pooling": ROOT / "shop" / "text" / "pooling.py",
    "broken": ROOT / "shop" / "text" / "broken.py",
}


@pytest.fixture(scope="module")
def reports():
    by_stem = analyse(list(FILES.values()), levels=("fx",), roots=[str(ROOT)])
    return {name: by_stem[path.stem] for name, path in FILES.items()}


def _load_notes(report):
    return [d for d in report.diagnostics if d.category == "load"]


def test_plain_python_cannot_import_these_files_as_package_modules():
    run = subprocess.run([sys.executable, "-c", "import shop.vision.encoder"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 1 and "No module named 'fxlens_missing_vision_toolkit'" in run.stderr


def test_a_file_with_relative_imports_loads_through_a_stand_in_package_and_says_so(reports):
    report = reports["encoder"]
    [note] = _load_notes(report)
    assert note.severity == "information" and note.line == 1
    assert "`shop/__init__.py` failed to import (shop/__init__.py:2 → shop/predictor.py:1: " in note.message
    assert (
        "No module named 'fxlens_missing_vision_toolkit'" in note.message
        and "stood in an empty package" in note.message
    )
    # the nodes are torch's own for the same classes, imported past the same `__init__` by hand
    stand_in = types.ModuleType("shop")
    stand_in.__path__ = [str(ROOT / "shop")]
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name == "shop" or name.startswith("shop.")}
    sys.modules["shop"] = stand_in
    try:
        encoder = importlib.import_module("shop.vision.encoder")
        raw = torch.fx.symbolic_trace(encoder.Encoder()).graph
    finally:
        for name in [n for n in sys.modules if n == "shop" or n.startswith("shop.")]:
            del sys.modules[name]
        sys.modules.update(saved)
    fx = report.find_class("Encoder").levels["fx"]
    assert fx.ok and [(n.name, n.op) for n in fx.nodes] == [(n.name, n.op) for n in raw.nodes]


def test_a_file_with_no_relative_import_loads_by_path_and_says_so(reports):
    report = reports["pooling"]
    [note] = _load_notes(report)
    assert note.severity == "information" and "loaded this file by its path" in note.message
    assert "shop/predictor.py:1" in note.message
    assert report.find_class("MeanPool").levels["fx"].ok


def test_the_files_own_failing_import_stays_an_error_at_its_line(reports):
    report = reports["broken"]
    errors = [d for d in _load_notes(report) if d.severity == "error"]
    assert [(d.line, d.message) for d in errors] == [
        (4, "ModuleNotFoundError: No module named 'shop.text.tokenizer_missing'")
    ]
    assert not report.classes


def test_a_failing_import_of_the_file_itself_names_the_chain_at_the_files_import_line():
    path = ROOT / "uses_tools.py"
    report = analyse([path], levels=("fx",), roots=[str(ROOT)])[path.stem]
    [error] = [d for d in report.diagnostics if d.category == "load"]
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("import tools"))
    assert error.line == line and error.message == "ModuleNotFoundError: No module named 'fxlens_absent_toolkit'"
    assert (
        "The import chain: uses_tools.py:5 → tools/__init__.py:1 → tools/helpers.py:1 → `import fxlens_absent_toolkit`."
    ) in error.explanation

"""No Python file of server/ or tests/ is longer than MAX_LINES: past it, a file is split along a seam (and
docs/architecture.md's map says where its parts went)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400
CHECKED_FOLDERS = ("server", "tests")


def line_count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def test_no_python_file_of_server_or_tests_is_longer_than_400_lines():
    files = [path for folder in CHECKED_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 100  # the folders were found
    too_long = [f"{path.relative_to(ROOT)} ({line_count(path)})" for path in files if line_count(path) > MAX_LINES]
    assert too_long == [], "split these along a seam: " + ", ".join(too_long)


def test_the_count_is_the_editors_line_count(tmp_path: Path):
    (tmp_path / "three.py").write_text("a = 1\nb = 2\n\n")
    (tmp_path / "no_final_break.py").write_text("a = 1\nb = 2")
    assert line_count(tmp_path / "three.py") == 3
    assert line_count(tmp_path / "no_final_break.py") == 2

"""Every test file has a name of its own: the test folders are not packages (pytest imports each file by its
basename), so a second `test_x.py` in another folder stops the whole run at collection, far from the change."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_two_test_files_share_a_name():
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        by_name[path.name].append(str(path.relative_to(ROOT)))
    assert len(by_name) > 100  # the test files were found
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert shared == {}, f"rename one of each: {shared}"

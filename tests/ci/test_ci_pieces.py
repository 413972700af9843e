"""The torch-free pieces of `fxlens check` over trees: which files hold Module classes, `.gitignore`
outside a repository, character columns, GitHub escaping, what the cache key reads."""

from __future__ import annotations

from pathlib import Path

from fxlens.ci.cache import workspace_imports
from fxlens.ci.check import costliest_first
from fxlens.ci.findings import finding
from fxlens.ci.formats import github_lines
from fxlens.ci.tree import files_to_check, module_files
from fxlens.report import Diagnostic


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_module_files_follow_bases_across_files(tmp_path):
    _write(
        tmp_path,
        {
            "a.py": "import torch.nn as nn\nclass A(nn.Module): pass\n",
            "b.py": "from torch.nn import Module as M\nclass B(M): pass\n",
            "c.py": "from a import A\nclass C(A): pass\n",  # a Module through another file's class
            "d.py": "from c import C\nclass D(C): pass\n",  # ... to any depth
            "e.py": "import lightning as L\nclass E(L.LightningModule): pass\n",
            "f.py": "class Config:\n    width = 3\n\ndef f(x):\n    return x\n",
            "g.py": "class G(\n",  # unparsable: checked, its syntax error reported
        },
    )
    names = sorted(Path(p).name for p in module_files([str(tmp_path / f"{n}.py") for n in "abcdefg"]))
    assert names == ["a.py", "b.py", "c.py", "d.py", "e.py", "g.py"]


def test_gitignore_outside_a_repository_and_exclude(tmp_path):
    module = "import torch\nclass M(torch.nn.Module): pass\n"
    _write(
        tmp_path,
        {
            "pkg/model.py": module,
            "pkg/gen/auto.py": module,
            "notes/x_test.py": module,
            "keep/y_test.py": module,
            "deep/a/b/skip.py": module,
            "other/z.py": module,
            ".gitignore": "# generated\ngen/\n*_test.py\n!keep/y_test.py\n/deep/**/skip.py\n",
        },
    )
    found = sorted(
        Path(p).relative_to(tmp_path).as_posix() for p in files_to_check([str(tmp_path)], ["other"], str(tmp_path))
    )
    assert found == ["keep/y_test.py", "pkg/model.py"]


def test_columns_are_characters_and_github_escapes(tmp_path):
    line = "        y = «ü» + torch.relu(x, a=1)"
    col = len(line[: line.index("torch")].encode())
    d = Diagnostic(
        3,
        col,
        3,
        col + len("torch.relu(x, a=1)"),
        "error",
        "trace",
        "50% broke:\nhere, or there",
        fix="do a, then b",
        class_name="M",
        level="fx",
    )
    f = finding("pkg/m.py", d, ["", "", line])
    assert f.column == line.index("torch") + 1 and f.end_column == len(line) + 1
    (command,) = github_lines([f])
    assert command.startswith("::error file=pkg/m.py,line=3,col=")
    assert "title=fxlens trace (M%2C fx)::50%25 broke:%0Ahere, or there%0Afix: do a, then b" in command
    assert github_lines([finding("m.py", Diagnostic(1, 0, 1, 0, "hint", "not-executed", "skipped"), [""])]) == []


def test_cache_key_reads_the_workspace_modules_a_file_imports(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .layers import Layer\n",
            "pkg/layers.py": "import torch\nfrom . import util\n",
            "pkg/util.py": "X = 1\n",
            "pkg/model.py": "from .layers import Layer\nimport numpy\n",
            "pkg/unrelated.py": "",
            "top.py": "from pkg.model import Layer\n",
        },
    )

    def names(p):
        return sorted(
            Path(f).relative_to(tmp_path).as_posix() for f in workspace_imports(str(tmp_path / p), str(tmp_path))
        )

    assert names("pkg/model.py") == ["pkg/__init__.py", "pkg/layers.py", "pkg/util.py"]
    assert names("top.py") == ["pkg/__init__.py", "pkg/layers.py", "pkg/model.py", "pkg/util.py"]


def test_a_file_outside_the_workspace_brings_its_own_project(tmp_path):
    _write(
        tmp_path,
        {
            "elsewhere/pkg/__init__.py": "",
            "elsewhere/pkg/parts.py": "X = 1\n",
            "elsewhere/pkg/model.py": "from .parts import X\n",
            "here/x.py": "",
        },
    )
    found = workspace_imports(str(tmp_path / "elsewhere/pkg/model.py"), str(tmp_path / "here"))
    assert sorted(Path(f).name for f in found) == ["__init__.py", "parts.py"]


def test_progress_only_on_a_terminal():
    import io

    from fxlens.ci.check import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet, shown = io.StringIO(), Terminal()
    for stream in (quiet, shown):
        progress = Progress(3, stream)
        for _ in range(3):
            progress.step()
        progress.close()
    assert quiet.getvalue() == ""
    assert "fxlens: 1/3 files" in shown.getvalue() and "fxlens: 3/3 files" in shown.getvalue()


def test_a_cold_check_starts_with_the_files_it_knows_least_and_the_longest():
    # files never traced before come first, longest text first (nothing else tells their cost); then the
    # files the cache folder recorded a cost for, costliest first
    misses = {
        "small_new.py": (None, "x" * 10),
        "big_new.py": (None, "x" * 5000),
        "cheap_known.py": (0.5, "x" * 9000),
        "dear_known.py": (12.0, "x" * 20),
    }
    order = sorted(misses, key=lambda name: costliest_first(*misses[name]))
    assert order == ["big_new.py", "small_new.py", "dear_known.py", "cheap_known.py"]

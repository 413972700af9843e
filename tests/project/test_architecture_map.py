"""docs/architecture.md stays true to the tree: its code map names every folder and module under server/fxlens
and nothing that is gone, its glossary points at modules that exist, and it names the repository's folders
and the test folders.

The map is read as it is written: a `### \\`folder/\\`` heading per folder of server/fxlens (the top level is
`server/fxlens/`), then a table whose rows start with the folder's modules in backticks. A package's
`__init__.py` need not be listed: it is the folder itself (its docstring is what the folder's heading says),
so the folder's line is its line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "server" / "fxlens"
PAGE = ROOT / "docs" / "architecture.md"
# top-level folders that tools make, not the project
TOOL_FOLDERS = {"build", "dist", "node_modules", "__pycache__"}

_HEADING = re.compile(r"^### `([^`]+/)`")
_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|")
_CODE = re.compile(r"`([^`]+)`")


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _folder_key(heading: str) -> str:
    """`server/fxlens/` -> "", `worker/levels/` -> "worker/levels"."""
    return heading.removeprefix("server/fxlens/").strip("/")


def _first_cell_names(line: str) -> list[str]:
    row = _ROW.match(line)
    return _CODE.findall(row.group(1)) if row else []


def mapped() -> dict[str, set[str]]:
    """Folder (relative to server/fxlens) -> the modules its code-map table names."""
    folders: dict[str, set[str]] = {}
    current = None
    for line in _section(PAGE.read_text(encoding="utf-8"), "Code map").splitlines():
        if line.startswith("### "):
            heading = _HEADING.match(line)
            current = _folder_key(heading.group(1)) if heading else None
            if current is not None:
                folders.setdefault(current, set())
        elif current is not None:
            folders[current] |= {name for name in _first_cell_names(line) if name.endswith(".py")}
    return folders


def on_disk() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for folder in [PACKAGE, *PACKAGE.rglob("*")]:
        if folder.is_dir() and "__pycache__" not in folder.parts:
            key = folder.relative_to(PACKAGE).as_posix().removeprefix(".")
            folders[key] = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    return folders


def _heading(folder: str) -> str:
    return f"### `{folder}/`" if folder else "### `server/fxlens/`"


def test_the_code_map_names_every_folder_and_module_under_server_fxlens_and_nothing_else():
    disk, page = on_disk(), mapped()
    problems = [
        f"add a section '{_heading(f)} — <its job>' with a table of its modules (folder on disk)"
        for f in sorted(disk.keys() - page.keys())
    ]
    problems += [
        f"remove the section '{_heading(f)}': server/fxlens/{f} does not exist"
        for f in sorted(page.keys() - disk.keys())
    ]
    for folder in sorted(disk.keys() & page.keys()):
        problems += [
            f"add a row `| \\`{m}\\` | <its job> |` under '{_heading(folder)}' (module on disk)"
            for m in sorted(disk[folder] - page[folder])
        ]
        problems += [
            f"remove `{m}` from the table under '{_heading(folder)}': it is not on disk"
            for m in sorted(page[folder] - disk[folder])
        ]
    assert not problems, "docs/architecture.md's code map is out of date:\n" + "\n".join(problems)


def test_the_worker_stage_table_names_the_worker_folders():
    stages = set()
    for line in _section(PAGE.read_text(encoding="utf-8"), "Code map").splitlines():
        stages |= {name.strip("/") for name in _first_cell_names(line) if re.fullmatch(r"[a-z_]+/", name)}
    on_disk_stages = {p.name for p in (PACKAGE / "worker").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert on_disk_stages <= stages, f"add the worker stage(s) {sorted(on_disk_stages - stages)} to the stage table"


def test_every_glossary_word_names_modules_that_exist():
    problems = []
    rows = [
        line
        for line in _section(PAGE.read_text(encoding="utf-8"), "Glossary").splitlines()
        if line.startswith("| ") and not line.startswith("| word") and not line.startswith("|---")
    ]
    assert rows, "docs/architecture.md has no glossary table"
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        word, where = cells[0], cells[-1]
        modules = [m for m in _CODE.findall(where) if m.endswith(".py")]
        if not modules:
            problems.append(f"give the glossary word {word!r} the module it lives in (a `path.py` in its last cell)")
        problems += [
            f"glossary word {word!r}: `{m}` is no module of server/fxlens: fix or remove it"
            for m in modules
            if not (PACKAGE / m).is_file()
        ]
    assert not problems, "docs/architecture.md's glossary is out of date:\n" + "\n".join(problems)


def test_the_page_names_the_repository_folders_and_the_test_folders():
    page = PAGE.read_text(encoding="utf-8")
    listed = set()
    for line in _section(page, "Code map").split("### The repository", 1)[1].splitlines():
        listed |= {name.strip("/") for name in _first_cell_names(line) if name.endswith("/")}
    folders = {
        p.name
        for p in ROOT.iterdir()
        if p.is_dir()
        and p.name not in TOOL_FOLDERS
        and (not p.name.startswith(".") or p.name == ".ci")
        and not p.name.endswith(".egg-info")
    }
    problems = [f"add a row `| \\`{f}/\\` | <its job> |` under `### The repository`" for f in sorted(folders - listed)]
    problems += [f"remove `{f}/` from `### The repository`: it does not exist" for f in sorted(listed - folders)]
    test_folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    problems += [
        f"name `tests/{f}/` (and what it holds) in the Tests section"
        for f in sorted(test_folders)
        if f"`tests/{f}/" not in page
    ]
    assert not problems, "docs/architecture.md's repository map is out of date:\n" + "\n".join(problems)

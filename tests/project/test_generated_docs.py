"""What scripts/generate.py writes agrees with what it is written from: VS Code's settings
(vscode-client/package.json), docs/settings.md and the extension's README with lsp/settings.py's SETTINGS,
docs/levels.md's table with report.LEVEL_INFO, docs/cli.md's command reference with the argparse parser."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "python3 scripts/generate.py"


def _load_generator():
    spec = importlib.util.spec_from_file_location("fxlens_generate", ROOT / "scripts" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _load_generator()


def test_vscode_settings_are_the_settings_table():
    package = json.loads(generate.PACKAGE_JSON.read_text())
    assert package["contributes"]["configuration"] == generate.configuration(), (
        f"vscode-client/package.json's contributes.configuration differs from lsp/settings.py: run `{REGENERATE}`"
    )


GENERATED = [
    "vscode-client/package.json",
    "vscode-client/README.md",
    "docs/settings.md",
    "docs/levels.md",
    "docs/cli.md",
]


def test_these_are_the_files_the_generator_writes():
    assert sorted(generate.expected()) == sorted(ROOT / doc for doc in GENERATED)


@pytest.mark.parametrize("doc", GENERATED)
def test_each_generated_file_is_up_to_date(doc):
    path = ROOT / doc
    assert path.read_text() == generate.expected()[path], (
        f"{path.relative_to(ROOT)} differs from what its source gives: run `{REGENERATE}`"
    )


def test_the_check_names_a_stale_file_and_the_command(monkeypatch, capsys):
    renamed = tuple(replace(level, what=level.what + " (renamed)") for level in generate.LEVEL_INFO)
    monkeypatch.setattr(generate, "LEVEL_INFO", renamed)
    assert generate.main(["--check"]) == 1
    assert f"docs/levels.md is out of date: run `{REGENERATE}`" in capsys.readouterr().err


def test_every_setting_every_level_and_every_command_is_in_the_docs():
    settings, levels, cli = (
        generate.SETTINGS_DOC.read_text(),
        generate.LEVELS_DOC.read_text(),
        generate.CLI_DOC.read_text(),
    )
    assert all(f"`fxlens.{s.key}`" in settings for s in generate.SETTINGS)
    assert all(f"| `{info.name}` |" in levels for info in generate.LEVEL_INFO)
    assert all(f"### `fxlens {name}`" in cli for name, _, _ in generate._commands(generate.cli_parser()))
    assert "--shard K/N" in cli and "--fail-on" in cli and sys.executable not in cli

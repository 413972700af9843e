"""Writes what the repository states twice from the one place it is declared:

- VS Code's settings (vscode-client/package.json, `contributes.configuration`) and the settings tables of
  docs/settings.md and of the extension's README (vscode-client/README.md), from `fxlens.lsp.settings.SETTINGS`;
- the level table of docs/levels.md, from `fxlens.level_info.LEVEL_INFO`;
- the commands and flags of docs/cli.md, from the argparse parser (`fxlens.cli.parser`).

`python3 scripts/generate.py` rewrites them; `--check` changes nothing and exits 1, naming each file that
differs from what its source gives (tests/project/test_generated_docs.py runs that check). In the docs, the
generated text sits between two marker comments; the prose around them is written by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))  # this checkout's fxlens, installed or not

from fxlens.cli import parser as cli_parser  # noqa: E402
from fxlens.level_info import LEVEL_INFO, LevelInfo  # noqa: E402
from fxlens.lsp.settings import SETTINGS, Setting  # noqa: E402

COMMAND = "python3 scripts/generate.py"
PACKAGE_JSON = ROOT / "vscode-client" / "package.json"
SETTINGS_DOC = ROOT / "docs" / "settings.md"
EXTENSION_README = ROOT / "vscode-client" / "README.md"
LEVELS_DOC = ROOT / "docs" / "levels.md"
CLI_DOC = ROOT / "docs" / "cli.md"
# a default that is this machine's (an interpreter, a cache folder) is not written into the docs
MACHINE_DEFAULT = "what `--help` shows on your machine"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(value: object) -> str:
    return f"`{value}`" if isinstance(value, str) and value else f"`{json.dumps(value)}`"


# ---- settings ----------------------------------------------------------------------------------------


def _property(setting: Setting) -> dict:
    minimum = {"minimum": setting.minimum.value} if setting.minimum else {}
    return {**setting.schema, "default": setting.default(), **minimum, "markdownDescription": setting.description}


def configuration() -> dict:
    """package.json's `contributes.configuration`."""
    return {"title": "fxlens", "properties": {f"fxlens.{s.key}": _property(s) for s in SETTINGS}}


def package_json(text: str) -> str:
    package = json.loads(text)
    package["contributes"]["configuration"] = configuration()
    return json.dumps(package, indent=2) + "\n"


def settings_table(client: bool = False) -> str:
    """The settings as a Markdown table; `client`: with VS Code's defaults (its `python` is empty)."""
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = _code(s.default()) if client or not s.default_words else s.default_words
        meaning = s.description
        for value, what in zip(s.schema.get("enum", ()), s.schema.get("enumDescriptions", ())):
            meaning += f" `{value}`: {what[:1].lower() + what[1:]}"
        if s.minimum:
            meaning += f" A smaller value is raised to `{s.minimum.value}`: {s.minimum.why}."
        rows.append(f"| `fxlens.{s.key}` | {_cell(default)} | {_cell(meaning)} |")
    return "\n".join(rows)


# ---- levels ------------------------------------------------------------------------------------------


def _when(info: LevelInfo) -> str:
    if info.default:
        return "with every edit (the default)"
    asked = f"when asked for (`--level {info.name}`, `fxlens.levels`)"
    if info.deep and info.on_hover:
        return asked + ", or when a hover or the graph view wants it"
    return asked + (", or by the graph view" if info.deep else "")


def levels_table() -> str:
    rows = ["| level | what | traced |", "|---|---|---|"]
    rows += [f"| `{info.name}` | {_cell(info.what)} | {_when(info)} |" for info in LEVEL_INFO]
    return "\n".join(rows)


# ---- the command line --------------------------------------------------------------------------------


def _value_name(action: argparse.Action) -> str:
    if action.metavar:
        return str(action.metavar)
    if action.choices:
        return "|".join(str(choice) for choice in action.choices)
    return action.dest.upper()


def _spelling(action: argparse.Action) -> str:
    """`--level LEVEL`, `-j N, --jobs N`, `PATH...`, `[REF]`: the argument as the synopsis writes it."""
    if not action.option_strings:
        name = _value_name(action)
        return {"+": f"{name}...", "?": f"[{name}]", "*": f"[{name}...]"}.get(str(action.nargs), name)
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    return ", ".join(f"{option} {_value_name(action)}" for option in action.option_strings)


def _synopsis(action: argparse.Action) -> str:
    if not action.option_strings:
        return _spelling(action)
    longest = max(action.option_strings, key=len)
    one = longest if action.nargs == 0 else f"{longest} {_value_name(action)}"
    repeated = "..." if isinstance(action, argparse._AppendAction) else ""
    return one + repeated if action.required else f"[{one}]{repeated}"


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    return text.replace("%(default)s", MACHINE_DEFAULT).replace("%%", "%")


def _commands(root: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """Each subcommand: its name, its one-line help and its parser, in the order `fxlens --help` lists them."""
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in sub._choices_actions}
    return [(name, helps.get(name, ""), command) for name, command in sub.choices.items()]


def cli_reference() -> str:
    root = cli_parser()
    blocks = []
    for name, summary, command in _commands(root):
        actions = [a for a in command._actions if a.dest != "help"]
        synopsis = " ".join([f"{root.prog} {name}"] + [_synopsis(a) for a in actions])
        rows = ["| argument | meaning |", "|---|---|"]
        rows += [f"| `{_cell(_spelling(a))}` | {_cell(_help(a))} |" for a in actions]
        blocks.append(
            f"### `{root.prog} {name}`\n\n{summary[:1].upper() + summary[1:]}.\n\n```\n{synopsis}\n```\n\n"
            + "\n".join(rows)
        )
    return "\n\n".join(blocks)


# ---- writing -----------------------------------------------------------------------------------------


def between_markers(text: str, name: str, generated: str) -> str:
    """`text` with what lies between the `name` markers replaced by `generated`."""
    begin, end = f"<!-- generated: {name} ({COMMAND}) -->", f"<!-- end of generated: {name} -->"
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no `{begin}` ... `{end}` markers: put them where the {name} go")
    return pattern.sub(lambda _: f"{begin}\n{generated}\n{end}", text, count=1)


def expected() -> dict[Path, str]:
    """Each generated file's whole text, as its sources give it."""
    return {
        PACKAGE_JSON: package_json(PACKAGE_JSON.read_text()),
        SETTINGS_DOC: between_markers(SETTINGS_DOC.read_text(), "settings", settings_table()),
        EXTENSION_README: between_markers(EXTENSION_README.read_text(), "settings", settings_table(client=True)),
        LEVELS_DOC: between_markers(LEVELS_DOC.read_text(), "levels", levels_table()),
        CLI_DOC: between_markers(CLI_DOC.read_text(), "commands", cli_reference()),
    }


def stale() -> list[Path]:
    """The generated files that differ from what their sources give."""
    return [path for path, text in expected().items() if path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--check", action="store_true", help="change nothing; exit 1 if a generated file is stale")
    args = options.parse_args(argv)
    if args.check:
        behind = stale()
        for path in behind:
            print(f"{path.relative_to(ROOT)} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1 if behind else 0
    for path, text in expected().items():
        if path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The settings a repository's YAML and JSON files hold (`configs/base.yaml`), read as plain data.

Research code often keeps a model's sizes in a config file that its training script loads into the
object the model reads (`cfg.model.dim`, `cfg["heads"]`). fxlens reads each such file of the repository,
within bounds, and flattens it to its leaf settings ({`dim`: 256, `heads`: 4}: a model reads `dim` from
whichever section its script hands it). YAML is read by a small reader of the subset config files use:
mappings by indentation, scalars, `[a, b]` and `- item` lists of scalars, comments; a file it does not
understand is skipped (fxlens depends on nothing but torch in the user's interpreter).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fxlens.worker.construction.package_index import repository_files

MAX_FILES = 200
MAX_FILE_BYTES = 256 << 10
_SUFFIXES = (".yaml", ".yml", ".json")
_NUMBER = re.compile(r"[-+]?(\d[\d_]*)?(\.\d*)?([eE][-+]?\d+)?")


@dataclass
class ConfigFile:
    path: str
    defaults: dict[str, Any]  # leaf setting -> value, the first of a name in the file's order
    declared_by: str = ""


def config_files(folder: str) -> list[ConfigFile]:
    found = []
    for path in repository_files(folder, _SUFFIXES, MAX_FILES, MAX_FILE_BYTES):
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            data = json.loads(text) if path.endswith(".json") else read_yaml(text)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        values = leaves(data)
        if values:
            found.append(ConfigFile(path, values))
    return found


def leaves(data: Any) -> dict[str, Any]:
    """{name: value} of every setting that is not itself a section, outer sections first."""
    found: dict[str, Any] = {}
    if not isinstance(data, dict):
        return found
    sections = []
    for key, value in data.items():
        if isinstance(value, dict):
            sections.append(value)
        elif isinstance(key, str) and key.isidentifier():
            found.setdefault(key, value)
    for section in sections:
        for key, value in leaves(section).items():
            found.setdefault(key, value)
    return found


def scalar(text: str) -> Any:
    """A YAML scalar: null, a bool, a number, a flow list of scalars, else the (unquoted) string."""
    text = text.strip()
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [scalar(part) for part in inner.split(",")] if inner else []
    if _NUMBER.fullmatch(text) and any(c.isdigit() for c in text):
        number = text.replace("_", "")
        return float(number) if any(c in number for c in ".eE") else int(number)
    return text


def _uncommented(line: str) -> str:
    quote = ""
    for index, char in enumerate(line):
        if char in "'\"" and not quote:
            quote = char
        elif char == quote:
            quote = ""
        elif char == "#" and not quote and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def read_yaml(text: str) -> dict[str, Any]:
    """The mapping a config file's YAML holds. Raises ValueError on anything outside the subset."""
    root: dict[str, Any] = {}
    # (indent, the mapping or list at that indent)
    stack: list[tuple[int, Any]] = [(-1, root)]
    pending: tuple[dict, str, int] | None = None  # a `key:` whose value is the block below it
    for raw in text.splitlines():
        line = _uncommented(raw)
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if pending is not None:
            owner, key, at = pending
            pending = None
            item = body.startswith("- ") or body == "-"
            if indent > at or (indent == at and item):  # YAML lets a list's items sit at its key's indent
                owner[key] = [] if item else {}
                stack.append((indent, owner[key]))
        while indent < stack[-1][0] or (
            indent == stack[-1][0] and isinstance(stack[-1][1], list) and not body.startswith("-")
        ):
            stack.pop()
        container = stack[-1][1]
        if body.startswith("- ") or body == "-":
            if not isinstance(container, list):
                raise ValueError("a list item outside a list")
            container.append(scalar(body[1:]))
            continue
        key, colon, value = body.partition(":")
        if not colon or not isinstance(container, dict) or (value and not value.startswith(" ")):
            raise ValueError(f"not a mapping line: {body!r}")
        key = key.strip().strip("'\"")
        if value.strip() in ("|", ">", "|-", ">-"):
            raise ValueError("block scalars are not read")
        if value.strip():
            container[key] = scalar(value)
        else:
            container[key] = None
            pending = (container, key, indent)
    return root

"""`fxlens graph | check | diff | merge | pass | serve | mcp`: the terminal and CI face of fxlens.

`app.py` builds the parser and runs a command; each command registers its sub-parser from its own module
(`graph.py`, `check.py` for check, diff and merge, `pass_cmd.py`, `serve.py`, `mcp_cmd.py`); `files.py` holds what they
share (reading the file asked for, the errors that exit 2)."""

from fxlens.cli.app import main, parser

__all__ = ["main", "parser"]

"""IPython syntax in a notebook cell made inert for Python, line for line, so that positions stay put.

A cell may hold lines Python cannot parse: line magics (`%matplotlib inline`, `x = %time f()`), shell
escapes (`!pip install einops`, `files = !ls`), help (`model?`, `??nn.Linear`) and cell magics
(`%%bash`, `%%time`). Each such line becomes `pass` at its own indentation (a block that only held a
magic stays a block); a cell magic whose body is not Python blanks the whole cell. Nothing here runs:
the magic is simply gone from what the worker sees. Only the start of a logical line can be a magic
(`% b` continuing `(a` is Python's modulo), so brackets, strings and backslashes are followed.
"""

from __future__ import annotations

import re

from fxlens import lines as line_model

# cell magics whose body is ordinary Python that IPython runs in the notebook's namespace
PYTHON_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

_ASSIGNED_MAGIC = re.compile(r"[A-Za-z_][\w.,\s\[\]()*]*(?<![=<>!])=\s*[%!](?!=)")  # files = !ls
_HELP = re.compile(r"\?{0,2}[A-Za-z_][\w.\[\]()]*\?{0,2}")  # model?  ??nn.Linear


def _is_magic(line: str) -> bool:
    code = line.strip()
    if not code:
        return False
    if code[0] in "%!?" or _ASSIGNED_MAGIC.match(code):
        return True
    return code.endswith("?") and _HELP.fullmatch(code) is not None


class _Scanner:
    """Follows strings, brackets and backslash continuations from line to line."""

    def __init__(self) -> None:
        self.quote = ""  # the open string's delimiter (', ", ''' or """), "" outside strings
        self.depth = 0
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return not self.quote and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        text = line.rstrip("\r")
        index, size = 0, len(text)
        while index < size:
            ch = text[index]
            if self.quote:
                if ch == "\\":
                    index += 2
                    continue
                if text.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = ""
                    continue
                index += 1
                continue
            if ch == "#":
                size = index  # the rest is a comment: a backslash in it continues nothing
                break
            if ch in "'\"":
                self.quote = ch * 3 if text.startswith(ch * 3, index) else ch
                index += len(self.quote)
                continue
            if ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        self.continued = size > 0 and text[:size].endswith("\\")
        if self.quote in ("'", '"') and not self.continued:
            self.quote = ""  # an unterminated one-line string ends with its line (a syntax error)


def neutralise(cell: str) -> str:
    """The cell's text with its IPython-only lines made inert; the same number of lines."""
    lines = line_model.split(cell)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%"):
        magic = first[2:].split(maxsplit=1)[0] if len(first) > 2 else ""
        if magic not in PYTHON_BODY_CELL_MAGICS:
            return "\n".join("" for _ in lines)
    scanner = _Scanner()
    out = []
    for line in lines:
        if scanner.at_statement_start and _is_magic(line):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}pass")
            continue
        scanner.feed(line)
        out.append(line)
    return "\n".join(out)

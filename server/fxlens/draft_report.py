"""The directive fxlens offers a class it has no graph for, as plain data (a part of the report, report.py):
the values it knows, each unknown marked with a placeholder.

Stdlib only, like report.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fxlens.plain_data import from_fields

# a drafted directive marks each value fxlens does not know with a name no file defines, `FILL_x`: the
# directive then fails at that name, and the worker says which argument it stands for (never a guess)
PLACEHOLDER_PREFIX = "FILL_"


def placeholder(name: str) -> str:
    """`FILL_num_units` for `num_units`; `args[1]` (past a `*args`) becomes `FILL_args_1`."""
    return PLACEHOLDER_PREFIX + "".join(c if c.isalnum() or c == "_" else "_" for c in name).strip("_")


@dataclass
class DraftValue:
    """One value of a drafted directive: a constructor argument or a forward input."""

    name: str  # the parameter it is for ("num_units", "x")
    # the Python expression fxlens would pass ("[2, 2]", "torch.randn(2, 3, 32, 32)"); "" when it does not know
    # one: the directive holds `placeholder(name)` there
    text: str = ""
    # where the value comes from ("guessed from its name", "the call at line 40"), or for an unknown, why
    # fxlens has none ("nothing says what `unit` is", "forward rejected (2, 3, 224, 224): ...")
    source: str = ""
    keyword: bool = True  # passed by name (a positional-only parameter, or an input by position: False)

    @property
    def known(self) -> bool:
        return bool(self.text)


# what leaves a class without a graph, as the lens says it: Draft.missing -> the lens's word
MISSING_WORDS = {"construction": "cannot build", "guess": "guess failed", "inputs": "no inputs"}


@dataclass
class Draft:
    """The `# fxlens:` directive fxlens offers a class it has no graph for: its constructor's required
    arguments with fxlens's best values, the inputs it found, each unknown marked (render/draft.py writes
    it out, lsp/drafts.py offers it as a code action)."""

    constructor: str  # the class as the file names it
    # "construction": a constructor argument is unknown; "guess": every value has a guess, but the module
    # rejected fxlens's guesses; "inputs": built, but no inputs for forward are known
    missing: str
    arguments: list[DraftValue] = field(default_factory=list)  # the constructor's, in its signature's order
    # forward's inputs; None: the directive only builds the class and fxlens finds the inputs
    inputs: list[DraftValue] | None = None
    # the last error fxlens's guesses met ("RuntimeError: a and b must have same reduction dim ..."), or ""
    problem: str = ""
    # the whole constructor expression when it is no plain call to cut into arguments (a package network's
    # `.get_submodule(...)`): written as is, `arguments` empty
    built: str = ""

    def unknowns(self) -> list[DraftValue]:
        return [v for v in [*self.arguments, *(self.inputs or [])] if not v.known]


def draft_from_json(data: dict[str, Any]) -> Draft:
    draft = from_fields(Draft, data)
    draft.arguments = [from_fields(DraftValue, v) for v in data.get("arguments", [])]
    inputs = data.get("inputs")
    draft.inputs = None if inputs is None else [from_fields(DraftValue, v) for v in inputs]
    return draft

"""A drafted directive (draft_report.Draft) as text: the `# fxlens:` expression, the code action's title, the
hover's line on what is missing."""

from __future__ import annotations

from fxlens.draft_report import MISSING_WORDS, Draft, DraftValue, placeholder

ACTION_TITLE = "Draft a `# fxlens:` directive"


def value_text(value: DraftValue) -> str:
    """The expression the directive passes: fxlens's value, or the placeholder that names the unknown."""
    return value.text if value.known else placeholder(value.name)


def _call(values: list[DraftValue]) -> str:
    # positional ones first, as Python requires; each keeps its place among its kind
    positional = [value_text(v) for v in values if not v.keyword]
    named = [f"{v.name}={value_text(v)}" for v in values if v.keyword]
    return ", ".join(positional + named)


def directive_text(draft: Draft) -> str:
    """`CifarNet(unit=PlainUnit, stages=[2, 2])(FILL_x)`; the constructor alone when fxlens is to find the
    inputs itself (`Draft.inputs` None)."""
    built = draft.built or f"{draft.constructor}({_call(draft.arguments)})"
    return built if draft.inputs is None else f"{built}({_call(draft.inputs)})"


def _names(values: list[DraftValue]) -> str:
    quoted = [f"`{v.name}`" for v in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def action_title(draft: Draft) -> str:
    """`Draft a `# fxlens:` directive (fill in `x`)`: the title says what is left to the user."""
    unknown = draft.unknowns()
    return f"{ACTION_TITLE} (fill in {_names(unknown)})" if unknown else ACTION_TITLE


def missing_lines(draft: Draft, markdown: bool = True, offer: str = "The code action on the class drafts") -> list[str]:
    """The hover's lines: what fxlens lacks and which values the drafted directive leaves to fill in, then
    what the module said to fxlens's last guess (for a block shown as it is)."""

    def code(text: str) -> str:
        return f"`{text}`" if markdown else text

    word = MISSING_WORDS.get(draft.missing, draft.missing)
    unknown = draft.unknowns()
    head = f"**{word.capitalize()}**" if markdown else word.capitalize()
    if unknown:
        head += ": fill in " + ", ".join(code(v.name) + (f" ({v.source})" if v.source else "") for v in unknown)
    head += f". {offer} {code('# fxlens: ' + directive_text(draft))}"
    return [head, f"last guess: {draft.problem}"] if draft.problem else [head]

"""Which classes of a file build which (from the source), and why a parent's run left its children
without inputs, in words a user reads."""

from __future__ import annotations

import re
from collections.abc import Iterable

from fxlens.worker.load.fingerprint import CodeIndex

# a name as used, not an attribute: `nn.LayerNorm` does not name the file's own `LayerNorm`
_NAME = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*")
_META_METHOD = re.compile(r"(?:Tensor\.)?(\w+)\(\) cannot be called on meta tensors")


def builders_of(wanted: Iterable[str], candidates: Iterable[str], code: CodeIndex) -> set[str]:
    """`wanted` and every candidate class whose code names one of them, through functions and
    globals of the file too (`make_block()` returning a `Block`), transitively: the classes that can
    build a wanted class as a child, so it is traced as the instance a parent built."""
    uses = {name: set(_NAME.findall(text)) for name, text in code.definitions.items()}
    reaches = set(wanted)
    changed = True
    while changed:
        changed = False
        for name, used in uses.items():
            if name not in reaches and used & reaches:
                reaches.add(name)
                changed = True
    return set(wanted) | (reaches & set(candidates))


def in_plain_words(error: BaseException) -> str:
    """What stopped a run, said for a person: the meta device's limits are fxlens's, not the user's bug."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    method = _META_METHOD.search(text)
    if method:
        return f".{method.group(1)}() cannot run on the meta device (meta tensors hold no values)"
    if "meta tensor" in text and ("no data" in text or "copy out" in text):
        return (
            "reading tensor values (.tolist(), .cpu(), numpy) cannot run on the meta device "
            "(meta tensors hold no values)"
        )
    if "meta device" in text and "numpy" in text:
        return "numpy cannot read a tensor on the meta device (meta tensors hold no values)"
    if "data-independent implementation does not exist" in text:
        op = re.search(r"for (torch\.\w+\(\))", text)
        what = op.group(1) if op else "a data-dependent operation"
        return f"{what} cannot run on the meta device (its result size depends on values)"
    return f"{type(error).__name__}: {text}"

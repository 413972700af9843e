"""The "vs HEAD" lens title of a class: what the buffer's edits did to its graphs since the last
commit (`vs HEAD: +12 nodes, +1 break`), or nothing when they did not change them (pure)."""

from __future__ import annotations

from fxlens.ci.graph_diff import ClassDiff, class_diff, short_summary
from fxlens.report import ClassReport


def vs_head_title(before: ClassReport | None, after: ClassReport, old_text: str, new_text: str) -> str | None:
    if before is None:
        return "vs HEAD: new class"
    diff = class_diff(after.name, before, after, old_text.split("\n"), new_text.split("\n"))
    # only the levels the buffer has so far: a level still streaming in is not a change
    levels = [d for d in diff.levels if d.after_ok is not None and d.before_ok is not None]
    shown = ClassDiff(diff.name, "changed" if any(d.changed for d in levels) else "same", levels)
    if shown.status == "same":
        return None
    return f"vs HEAD: {short_summary(shown)}"

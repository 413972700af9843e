"""A graph diff as terminal text, as a pull-request comment (markdown) and as JSON (pure)."""

from __future__ import annotations

from typing import Any

from fxlens.ci.graph_diff import OPCODES, ClassDiff, FileDiff, Item, LevelDiff, short_summary

MAX_LISTED = 20  # nodes listed per level and direction; the rest are counted


def _count_text(d: LevelDiff) -> str:
    if d.before_ok is None:
        return f"new: {sum(d.after_ops.values())} nodes" if d.after_ok else "new: fails to trace"
    if d.after_ok is None:
        return "gone"
    if not d.after_ok:
        return "fails to trace" + (
            f" (was {sum(d.before_ops.values())} nodes)" if d.before_ok else " (failed before too)"
        )
    before, after = sum(d.before_ops.values()), sum(d.after_ops.values())
    if not d.before_ok:
        return f"traces now: {after} nodes (failed before)"
    ops = [
        f"{op} {d.before_ops.get(op, 0)} → {d.after_ops.get(op, 0)}"
        for op in OPCODES
        if d.before_ops.get(op, 0) != d.after_ops.get(op, 0)
    ]
    return f"{before} → {after} nodes ({after - before:+d})" + (f": {', '.join(ops)}" if ops else "")


def _where(item: Item) -> str:
    return f"line {item.line}" if item.line else "no line"


def _item_lines(d: LevelDiff, code: str = "", signs: tuple[str, str] = ("+", "-")) -> list[str]:
    """One line per listed change; `code` wraps source text (markdown backquotes)."""
    lines: list[str] = []
    for sign, items in zip(signs, (d.added, d.removed)):
        for item in items[:MAX_LISTED]:
            text = f"  {code}{item.text}{code}" if item.text else ""
            lines.append(f"{sign} {item.kind} {code}{item.target}{code} ({_where(item)}){text}")
        if len(items) > MAX_LISTED:
            lines.append(f"{sign} … and {len(items) - MAX_LISTED} more")
    for label, items in (
        ("new failure", d.new_failures),
        ("fixed failure", d.fixed_failures),
        ("new graph break", d.new_breaks),
        ("fixed graph break", d.fixed_breaks),
    ):
        for item in items:
            lines.append(f"{label} ({_where(item)}, {item.kind}): {item.target.splitlines()[0] if item.target else ''}")
    return lines


def _changed(diffs: list[FileDiff]) -> list[tuple[FileDiff, list[ClassDiff]]]:
    return [(f, [c for c in f.classes if c.status != "same"]) for f in diffs]


def _headline(ref: str, diffs: list[FileDiff]) -> str:
    classes = sum(len(changed) for _, changed in _changed(diffs))
    return (
        f"fxlens diff {ref} → working tree: {len(diffs)} file(s) with Module classes changed, "
        f"{classes} class(es) changed"
    )


def diff_text(ref: str, diffs: list[FileDiff]) -> str:
    out = [_headline(ref, diffs)]
    for f, changed in _changed(diffs):
        out.append(f"{f.path} ({f.status})")
        for item in f.new_failures:
            out.append(f"  new failure of the file ({_where(item)}, {item.kind}): {item.target}")
        for c in changed:
            summary = short_summary(c)
            out.append(f"  {c.name} ({c.status}{': ' + summary if summary else ''})")
            for d in c.levels:
                if d.changed:
                    out.append(f"    {d.level}: {_count_text(d)}")
                    out.extend(f"      {line}" for line in _item_lines(d))
    return "\n".join(out)


def diff_markdown(ref: str, diffs: list[FileDiff]) -> str:
    out = [f"### {_headline(ref, diffs)}", ""]
    for f, changed in _changed(diffs):
        if not changed and not f.new_failures:
            continue
        for item in f.new_failures:
            out.append(f"- **`{f.path}`**: new failure of the file ({_where(item)}, `{item.kind}`): {item.target}")
        for c in changed:
            summary = short_summary(c)
            out += [
                f"#### `{f.path}` · `{c.name}` ({c.status}{': ' + summary if summary else ''})",
                "",
                "| level | nodes |",
                "|---|---|",
            ]
            out += [f"| {d.level} | {_count_text(d)} |" for d in c.levels]
            details = [
                line
                for d in c.levels
                if d.changed
                for line in [f"- **{d.level}**", *(f"  - {item}" for item in _item_lines(d, "`", ("added", "removed")))]
            ]
            out += ["", *details, ""]
    return "\n".join(out).rstrip() + "\n"


def _item_json(item: Item) -> dict[str, Any]:
    return {"kind": item.kind, "target": item.target, "line": item.line, "text": item.text}


def _level_json(d: LevelDiff) -> dict[str, Any]:
    lists = ("added", "removed", "new_failures", "fixed_failures", "new_breaks", "fixed_breaks")
    return {
        "level": d.level,
        "changed": d.changed,
        "before": {"ok": d.before_ok, "nodes": sum(d.before_ops.values()), "by_op": d.before_ops},
        "after": {"ok": d.after_ok, "nodes": sum(d.after_ops.values()), "by_op": d.after_ops},
        "node_delta": d.node_delta,
        **{name: [_item_json(i) for i in getattr(d, name)] for name in lists},
    }


def diff_json(ref: str, diffs: list[FileDiff]) -> dict[str, Any]:
    levels = [d for f in diffs for c in f.classes for d in c.levels]
    return {
        "ref": ref,
        "files": [
            {
                "path": f.path,
                "status": f.status,
                "new_failures": [_item_json(i) for i in f.new_failures],
                "fixed_failures": [_item_json(i) for i in f.fixed_failures],
                "classes": [
                    {
                        "class": c.name,
                        "status": c.status,
                        "summary": short_summary(c),
                        "levels": [_level_json(d) for d in c.levels],
                    }
                    for c in f.classes
                ],
            }
            for f in diffs
        ],
        "summary": {
            "changed_classes": sum(c.status != "same" for f in diffs for c in f.classes),
            "new_failures": sum(len(d.new_failures) for d in levels) + sum(len(f.new_failures) for f in diffs),
            "fixed_failures": sum(len(d.fixed_failures) for d in levels),
            "new_breaks": sum(len(d.new_breaks) for d in levels),
            "fixed_breaks": sum(len(d.fixed_breaks) for d in levels),
        },
    }

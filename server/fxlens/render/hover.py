"""Hover text for a line of a Module class: the class line, an `__init__` member line, or a line that
produced nodes. Markdown (small tables) or plaintext (aligned columns) for clients without Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fxlens.render import cost, kernels
from fxlens.render import nodes as q
from fxlens.render.calls import call_text, calls_on_line
from fxlens.render.causes import Cause, merge, plain
from fxlens.render.draft import missing_lines
from fxlens.render.graph_text import input_sources_text, inputs_text, shape_text, short_dtype, tensors_text, value_text
from fxlens.render.guards import hover_lines as guard_lines
from fxlens.render.ladder import rung
from fxlens.render.lens import level_title, size_text
from fxlens.render.text_out import MAX_ROWS, Out
from fxlens.report import COLUMN_LEVELS, LEVELS, OPCODES, ClassReport, FileReport, Member, Node


def hover_text(
    report: FileReport, line: int, col: int, markdown: bool = True, stale: bool = False, computing: tuple[str, ...] = ()
) -> str | None:
    """What to show for the cursor at (1-based line, byte column), or None when fxlens has nothing.
    `computing`: the deeper levels of the cursor's class being computed now (said in one folded line)."""
    cls = next((c for c in report.classes if c.line <= line <= c.end_line), None)
    out = Out(markdown)
    if stale:
        out.line(
            "_stale: the file does not parse; showing the last good trace_"
            if markdown
            else "(stale: the file does not parse; showing the last good trace)"
        )
    if cls is not None and line == cls.line:
        _class(out, cls)
    else:
        failed = _failures(out, report, line)
        guarded = guard_lines(out.code, out.bold, cls, line)
        if cls is not None and any(m.line == line for m in cls.members):
            _members(out, cls, [m for m in cls.members if m.line == line])
        elif (
            not _line(out, report, cls, line, col)
            and not _child_calls(out, report, cls, line)
            and not failed
            and not guarded
        ):
            return None
        for text in guarded:
            out.line(text)
    if computing:
        out.line(f"{', '.join(computing)}: computing… hover again")
    return out.text()


def _child_calls(out: Out, report: FileReport, cls: ClassReport | None, line: int) -> bool:
    """A parent's line whose nodes all sit on a child's lines (`x = block(x)`): what it calls."""
    found = calls_on_line(cls, line) if cls is not None else []
    for call in found:
        child = report.find_class(call.class_name)
        named = out.code(call.class_name)
        if child is not None and out.markdown:
            named = f"[{named}]({Path(report.path).as_uri()}#L{child.line})"
        out.line(f"{out.bold(f'line {line}')} calls " + call_text(call).replace(call.class_name, named, 1))
    return bool(found)


# -- a line where a level fails ------------------------------------------------------------------


def _failures(out: Out, report: FileReport, line: int) -> bool:
    """The failures on this line, one per cause (render/causes.py): what fails there in plain words,
    then each level's own text (torch's guard messages after their plain words), the why and the fix."""
    on_line = [
        d
        for d in report.all_diagnostics()
        if d.severity in ("error", "warning", "information") and d.line <= line <= (d.end_line or d.line)
    ]
    causes = merge(on_line)
    for cause in causes:
        d = cause.diagnostic
        where = f" in {cause.classes[0]}" if len(cause.classes) == 1 else ""  # several: the title names them
        if cause.merged:
            title = d.message
        else:
            title = (f"{d.level}: " if d.level else "") + {"error": "fails here", "warning": "warning"}.get(
                d.severity, "note"
            )
        out.line(f"{out.bold(title)}{where} · {out.code(d.category)}")
        _parts(out, cause)
        if d.explanation:
            out.line(f"why: {d.explanation}")
        if d.fix:
            out.line(f"fix: {d.fix}")
    return bool(causes)


def _parts(out: Out, cause: Cause) -> None:
    """Each level's text once: levels with the same text share it (`aten, core-aten, backward:`)."""
    texts: dict[str, list[str]] = {}
    for part in cause.parts:
        who = " · ".join(filter(None, [part.class_name if len(cause.classes) > 1 else None, part.level]))
        texts.setdefault(part.message, []).append(who)
    for message, whose in texts.items():
        said = plain(next(p for p in cause.parts if p.message == message))
        named = ", ".join(filter(None, whose))
        label = out.bold(f"{named}:") if cause.merged and named else ""
        if label or said:
            out.line(" ".join(filter(None, [label, said])))
        out.verbatim(message)


# -- the class line ------------------------------------------------------------------------------


def _class(out: Out, cls: ClassReport) -> None:
    out.line(f"{out.bold(cls.name)} — {inputs_text(cls)}")
    for said in (input_sources_text(cls), tensors_text(cls)):
        if said:
            out.line(said)
    if cls.build.how == "guessed":
        out.line(
            f"{out.bold('Guessed')}: nothing in the file says what to pass to {out.code(cls.name + '(...)')}, "
            f"so fxlens guessed {cls.build.detail}. Pin them (a code action on the class does it): "
            f"{out.code('# fxlens: ' + cls.build.directive)}"
        )
    rows = []
    for level, result in cls.levels.items():
        if result.ok:
            counts = q.opcode_counts(result)
            rows.append([level, str(len(result.nodes)), *(str(counts.get(op, 0)) for op in OPCODES), rung(result).name])
    if rows:
        out.table(["level", "nodes", *OPCODES, "rung"], rows)
    counted = next(
        (cls.levels[level] for level in cost.ATEN_LEVELS if level in cls.levels and cls.levels[level].ok), None
    )
    forward = cost.flops_line(counted.nodes, cls.build, " forward") if counted is not None else None
    for text in cost.class_cost_lines(cls) or ([forward] if forward else []):  # the aten count until it comes
        out.line(text)
    for level, result in cls.levels.items():
        if result.ok and (result.graphs is not None or level == "backward"):  # graphs, saved bytes
            out.line(level_title(level, result, cls))
        if not result.ok:
            first = result.diagnostics[0].message if result.diagnostics else result.note
            out.line(f"{level_title(level, result, cls)}" + (f": {first}" if first else ""))
    if cls.draft is not None:
        head, *problem = missing_lines(cls.draft, out.markdown)
        out.line(head)
        for text in problem:
            out.verbatim(text)


# -- an __init__ line ----------------------------------------------------------------------------


def _members(out: Out, cls: ClassReport, on_line: list[Member]) -> None:
    tops = [m for m in on_line if not any(m.name.startswith(o.name + ".") for o in on_line)]
    for top in tops:
        parts = [out.bold(f"self.{top.name}")]
        if top.kind == "module":
            parts.append(f"module {out.code(top.type)}")
        else:
            parts.append(f"{top.kind} {_tensor(top)}")
        inner = [m for m in on_line if m.name.startswith(top.name + ".")]
        parts += [f"{out.code(m.name)} {_tensor(m)}" for m in inner[:6]]
        if len(inner) > 6:
            parts.append(f"… {len(inner) - 6} more tensors")
        out.line(" · ".join(parts))
        # a container (a ModuleList of 12 blocks) touches hundreds of nodes: render only the rows shown
        used = [(level, node) for level in cls.levels for node in q.member_nodes(cls, top, level)]
        indexes = {level: q.by_name(cls.levels[level]) for level in {level for level, _ in used[:MAX_ROWS]}}
        rows = [
            [
                level,
                out.code(_what(node)),
                _users(q.user_lines(cls.levels[level], node, indexes[level]), node),
                f"L{node.line}" if node.line is not None else "",
                q.value(node),
            ]
            for level, node in used[:MAX_ROWS]
        ]
        if rows:
            out.table(["level", "node", "users", "line", "value"], rows, total=len(used))
        else:
            out.line(f"no node of {cls.name} uses it")


def _tensor(member: Member) -> str:
    shape = shape_text(Node(member.name, "get_attr", member.name, 0, shape=member.shape))
    return f"{shape} {short_dtype(member.dtype)}".strip()


# -- a line that produced nodes ------------------------------------------------------------------


def _what(node: Node, target: str | None = None) -> str:
    target = target or node.target
    if node.overload and not target.endswith("." + node.overload):
        target += f" ({node.overload})"
    return target if node.op == "call_function" and target.startswith("aten.") else f"{node.op} {target}"


def _users(lines: list[str], node: Node) -> str:
    return f"{node.num_users}" + (f" → {', '.join(lines)}" if lines else "")


def _where(cls: ClassReport, paths: list[str], container: ClassReport | None) -> str:
    if paths == [""]:
        return f"in {cls.name}" if cls is not container else ""
    shown = paths[0] if len(paths) == 1 else f"{paths[0]} … {paths[-1]}"
    shown = shown or "(root)"
    return (f"×{len(paths)} " if len(paths) > 1 else "") + f"in {cls.name}: {shown}"


# level -> the instances with nodes on the hovered line
_PerLevel = dict[str, list[q.Instance]]


def _line(out: Out, report: FileReport, container: ClassReport | None, line: int, col: int) -> bool:
    order = ([container] if container is not None else []) + [c for c in report.classes if c is not container]
    shown: list[tuple[q.Signature, ...]] = []
    heading_done = False
    for cls in order:
        leaves = q.leaf_paths(cls)
        # (a kernel level's nodes are kernels, many lines each: said below, for the cursor's class)
        per_level = {
            level: q.instances(q.on_line(cls.levels[level], line), leaves)
            for level in LEVELS
            if level in cls.levels and not kernels.is_kernel_level(cls.levels[level])
        }
        paths = list(dict.fromkeys(i.path for groups in per_level.values() for i in groups))
        if not paths:
            continue
        groups: dict[tuple[q.Signature, ...], list[str]] = {}
        for path in paths:
            sig = tuple(
                q.signature(next((i.nodes for i in per_level.get(level, []) if i.path == path), []), path)
                for level in LEVELS
            )
            groups.setdefault(sig, []).append(path)
        for sig, group in groups.items():
            if not heading_done:
                first = next(n for g in per_level.values() for i in g for n in i.nodes)
                fn = f" · {out.code(first.function)}" if first.function else ""
                out.line(f"{out.bold(f'line {line}')}{fn}")
                heading_done = True
            where = _where(cls, group, container)
            if sig in shown:
                out.line(f"also {where} (same nodes)")
                continue
            shown.append(sig)
            if where:
                out.line(where)
            if any(i.path == group[0] for level in COLUMN_LEVELS for i in per_level.get(level, [])):
                shown_aten = _node_table(out, cls, per_level, group[0], line, col)
            else:
                shown_aten = []
            _folded(out, per_level, group[0])
            _cost(out, cls, per_level, group[0], shown_aten, len(group))
    return _kernels(out, report, container, line, heading_done) or heading_done


def _kernels(out: Out, report: FileReport, cls: ClassReport | None, line: int, heading_done: bool) -> bool:
    """The kernels torch.compile runs for the line (the cursor's class's inductor level)."""
    result = kernels.kernel_level(cls)
    rows = (
        kernels.hover_lines(out.code, out.bold, out.markdown, cls, result, line, report.path)
        if cls is not None and result is not None
        else []
    )
    if not rows:
        return False
    if not heading_done:
        out.line(out.bold(f"line {line}"))
    out.line("\n".join(rows))
    return True


def _node_table(out: Out, cls: ClassReport, per_level: _PerLevel, path: str, line: int, col: int) -> list[Node]:
    """The table; returns its aten nodes in row order (the cursor's first)."""
    picked = {level: next((i.nodes for i in groups if i.path == path), []) for level, groups in per_level.items()}
    rows = q.cursor_first(q.pair_levels(picked.get("fx", []), picked.get("aten", [])), line, col)
    under = q.under_cursor(rows, line, col)
    indexes = {level: q.by_name(result) for level, result in cls.levels.items()}
    table = []
    for fx, aten in rows:
        cells = ["▸" if (fx, aten) in under else ""]
        for level, node in (("fx", fx), ("aten", aten)):
            if node is None:
                cells += ["", ""]
            else:
                cells += [
                    out.code(_what(node, q.local_target(node, path))),
                    _users(q.user_lines(cls.levels[level], node, indexes[level]), node),
                ]
        values = [q.value(fx), q.value(aten)]
        cells.append(values[0] if values[0] == values[1] or not values[1] else (values[0] or values[1]))
        table.append(cells)
    headers = ["", "fx", "users", "aten", "users", "value"]
    if "aten" not in cls.levels or not cls.levels["aten"].ok:
        headers, table = headers[:3] + headers[5:], [r[:3] + r[5:] for r in table]
    out.table(headers, table)
    return [aten for _, aten in rows if aten is not None]


def _packet(target: str) -> str:
    """`aten.addmm.default` -> `addmm` (the op, as torch names its overload packet), `operator.getitem` -> `getitem`."""
    parts = target.split(".")
    return parts[1] if parts[0] == "aten" and len(parts) > 1 else parts[-1]


def _folded(out: Out, per_level: _PerLevel, path: str) -> None:
    """The deeper levels (core-aten, ...), one line each: `core-aten: 3 nodes (permute, addmm, relu)`."""
    for level, groups in per_level.items():
        nodes = next((i.nodes for i in groups if i.path == path), [])
        if level in COLUMN_LEVELS or not nodes:
            continue
        ops = list(dict.fromkeys(_packet(n.target) for n in nodes))
        more = f", … {len(ops) - 8} more" if len(ops) > 8 else ""
        out.line(f"{level}: {len(nodes)} node{'s' if len(nodes) != 1 else ''} ({', '.join(ops[:8])}{more})")
        saved = [n for n in nodes if n.saved]
        if saved:
            out.line(
                f"{level}: saves "
                + ", ".join(f"{_packet(n.target)} {value_text(n)}" for n in saved)
                + f", {size_text(sum(n.bytes or 0 for n in saved))}"
            )


def _cost(out: Out, cls: ClassReport, per_level: _PerLevel, path: str, shown_aten: list[Node], instances: int) -> None:
    """The line's FLOPs (one instance's, from the first ATen level traced) and its overloads' schemas:
    the aten nodes in the table's order (the cursor's first), then the deeper levels'."""
    picked = [
        (level, next((i.nodes for i in per_level[level] if i.path == path), []))
        for level in cost.ATEN_LEVELS
        if level in per_level
    ]
    picked = [(level, nodes) for level, nodes in picked if nodes]
    if not picked:
        return
    flops = cost.flops_line(picked[0][1], cls.build, " each" if instances > 1 else "")
    if flops:
        out.line(flops)
    results = {id(n): cls.levels[level] for level, nodes in picked for n in nodes}
    ordered = [n for n in shown_aten if id(n) in results] + [n for _, nodes in picked for n in nodes]
    pairs = [(results[id(n)], n) for n in ordered if n.op == "call_function"]
    for text in cost.schema_lines(out.code, out.bold, pairs, "  \n" if out.markdown else "\n"):
        out.line(text)


EXECUTION_OFF = (
    "fxlens runs no code of this file (`fxlens.execution` is `off`, e.g. in an untrusted "
    "workspace), so there is no graph to show. Trust the workspace or set it to `safe`."
)


def execution_off_text(lines: Sequence[str], line: int) -> str | None:
    """The hover while execution is off: said on the lines of a top-level class, silent elsewhere."""
    for index in range(min(line, len(lines)) - 1, -1, -1):
        text = lines[index]
        if text.startswith("class "):
            return EXECUTION_OFF
        if text.strip() and not text[0].isspace() and not text.lstrip().startswith(("#", "@", ")")):
            return None
    return None

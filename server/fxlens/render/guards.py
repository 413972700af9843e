"""The dynamo level's guards in a person's words: what the compiled graph assumed, and which change of the
inputs, the module or torch's state makes `torch.compile` compile it again (pure: report data in, text out).

The lens on `forward` counts them; the hover on `forward` says the ones a user can change by calling
differently (inputs, attributes, grad mode), the hover on a line says the ones that line made.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fxlens.guard_report import CompiledFrame, DynamicProof, Guard
from fxlens.report import ClassReport

LEVEL = "dynamo"
_TYPE = re.compile(r"type=<class '(?:[\w.]*\.)?(?P<name>\w+)'>")
_VALUES = frozenset({"EQUALS_MATCH", "TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH", "NOT_NONE_MATCH"})
_ROLES = (("input", "inputs"), ("local", "values carried over a break"), ("attribute", "the module"))
_MAX_LISTED = 8
# what a reader looks for first: values a call passes or sets, then tensors, then types
_ORDER = {kind: rank for rank, kind in enumerate((*sorted(_VALUES), "TENSOR_MATCH", "LAMBDA_GUARD", "TYPE_MATCH"))}
Style = Callable[[str], str]


def frames_of(cls: ClassReport | None) -> list[CompiledFrame]:
    result = cls.levels.get(LEVEL) if cls is not None else None
    return result.frames if result is not None and result.ok else []


def lens_lines(cls: ClassReport) -> dict[int, str]:
    """The lens title on each compiled function's `def` line: `dynamo guards: 29 (2 on inputs, 16 on the
    module, 7 on globals, 4 on torch's state)`; frames resumed after a break count with their function."""
    frames = frames_of(cls)
    by_function: dict[str, list[CompiledFrame]] = {}
    for frame in frames:
        by_function.setdefault(frame.function, []).append(frame)
    titles = {}
    for group in by_function.values():
        line = next((f.line for f in group if f.line is not None), None)
        if line is None:
            continue
        guards = [g for f in group for g in f.guards]
        total = sum(f.count() for f in group)
        counts = [
            (sum(1 for g in guards if g.role == role), words)
            for role, words in (
                ("input", "on inputs"),
                ("local", "on values kept over a break"),
                ("attribute", "on the module"),
                ("global", "on globals"),
                ("state", "on torch's state"),
            )
        ]
        parts = [f"{count} {words}" for count, words in counts if count]
        compiled = f", {len(group)} compiled frames" if len(group) > 1 else ""
        titles[line] = f"dynamo guards: {total}{compiled}" + (f" ({', '.join(parts)})" if parts else "")
    return titles


@dataclass
class _Said:
    subject: str
    what: str  # what the guard holds true, in words
    change: str  # what recompiles


def said(guard: Guard) -> _Said | None:
    """The guard in words, or None for the checks no call of the user's changes (an object's identity in
    torch's own modules, a hooks dict's type): those are counted, not listed."""
    kind, subject = guard.kind, guard.subject
    if kind == "TENSOR_MATCH" and guard.shape is not None:
        dims = ", ".join("any" if size is None else str(size) for size in guard.shape)
        # fxlens runs the example on meta tensors: that device is fxlens's, not the user's
        device = f" on {guard.device}" if guard.device and guard.device != "meta" else ""
        grad = ", requires_grad" if guard.requires_grad else ""
        what = f"a {guard.dtype} tensor [{dims}]{device}{grad}"
        if guard.role == "attribute":  # parameters and buffers: torch keeps their sizes static
            return _Said(subject, what, "another shape, dtype, device or requires_grad (new values of the same do not)")
        fixed = any(size is not None for size in guard.shape)
        sizes = ", or another size (the first new size compiles once more, then torch treats that size as dynamic)"
        return _Said(subject, what, "another dtype, device or requires_grad" + (sizes if fixed else ""))
    if kind in _VALUES and guard.value is not None:
        verb = "is" if kind in ("TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH") else "=="
        assign = "assigning" if guard.role == "attribute" else "passing"
        return _Said(subject, f"{verb} {guard.value}", f"{assign} another value")
    if kind == "GLOBAL_STATE" and guard.state:
        return _Said("torch's state", _state_text(guard), "calling under another grad mode, autocast or default dtype")
    private = any(part.startswith("_") for part in subject.split("."))  # self._modules: torch's bookkeeping
    if (
        kind == "TYPE_MATCH"
        and guard.role in ("input", "attribute")
        and not private
        and (named := _TYPE.search(guard.code))
    ):
        return _Said(subject, f"is a {named.group('name')}", "an object of another class")
    if kind == "LAMBDA_GUARD" and guard.role in ("input", "local"):  # a relation between dynamic sizes
        return _Said(subject, guard.code.replace("L['", "").replace("']", ""), "sizes outside it")
    if kind == "DIMENSION_DYNAMIC_MARKING_GUARD" and guard.role == "input":
        return _Said(subject, "has no size marked dynamic", "marking one (torch._dynamo.mark_dynamic)")
    return None


def _state_text(guard: Guard) -> str:
    state = guard.state
    autocast = state.get("autocast_state", {}).get("enabled", [])
    parts = [
        f"grad mode {'on' if state.get('grad_mode') else 'off'}",
        f"autocast {'on' if any(autocast) else 'off'}",
        f"default dtype {state.get('default_dtype_name', state.get('default_dtype'))}",
        f"deterministic algorithms {'on' if state.get('deterministic_algorithms') else 'off'}",
    ]
    if "num_threads" in state:
        parts.append(f"{state['num_threads']} threads")
    return ", ".join(parts)


def _row(code: Style, found: _Said) -> str:
    subject = f"{code(found.subject)} " if found.subject else ""
    return f"{subject}{found.what} — recompiles on {found.change}"


def hover_lines(code: Style, bold: Style, cls: ClassReport | None, line: int) -> list[str]:
    """The guards for the hovered line: every compiled frame's on its `def` line, those a line made on it."""
    frames = frames_of(cls)
    at_def = [frame for frame in frames if frame.line == line]
    if at_def:
        functions = {frame.function for frame in at_def}
        proof = cls.levels[LEVEL].dynamic if cls is not None else None
        said_proof = proof_lines(code, proof) if proof is not None else []
        return _summary(code, bold, [frame for frame in frames if frame.function in functions]) + said_proof
    made = [(frame, g) for frame in frames for g in frame.guards if g.line == line]
    if not made:
        return []
    rows = list(dict.fromkeys(_row(code, s) for _, g in made if (s := said(g)) is not None))
    others = len(made) - sum(1 for _, g in made if said(g) is not None)
    head = f"{bold('dynamo guards')} from this line: {len(made)}" + (
        f" ({others} on torch's own objects and types)" if others else ""
    )
    return [head, "\n".join(f"- {row}" for row in rows[:_MAX_LISTED])] if rows else [head]


def _summary(code: Style, bold: Style, frames: list[CompiledFrame]) -> list[str]:
    total = sum(frame.count() for frame in frames)
    ids = ", ".join(frame.compile_id for frame in frames)
    out = [
        f"{bold('dynamo guards')}: {total} — what the graph{'s' if len(frames) > 1 else ''} torch.compile captured "
        f"assumed (compile {ids}); a call where one fails compiles again"
    ]
    guards = sorted((g for frame in frames for g in frame.guards), key=lambda g: _ORDER.get(g.kind, len(_ORDER)))
    for role, title in _ROLES:
        rows = list(dict.fromkeys(_row(code, s) for g in guards if g.role == role and (s := said(g)) is not None))
        if rows:
            more = f" (+{len(rows) - _MAX_LISTED} more)" if len(rows) > _MAX_LISTED else ""
            out.append(f"{title}{more}:\n" + "\n".join(f"- {row}" for row in rows[:_MAX_LISTED]))
    state = [s for g in guards if g.role == "state" and (s := said(g)) is not None]
    if state:
        out.append(f"{state[0].subject}: {state[0].what} — recompiles on {state[0].change}")
    listed = sum(1 for g in guards if said(g) is not None)
    cut = sum(frame.cut for frame in frames)
    if total > listed:
        kinds: dict[str, int] = {}
        for g in guards:
            if said(g) is None:
                kinds[g.kind] = kinds.get(g.kind, 0) + 1
        counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1]))
        out.append(
            f"and {total - listed} check{'s' if total - listed != 1 else ''} that no different call changes ({counted}"
            + (f", {cut} not kept in the report" if cut else "")
            + ")"
        )
    return out


def marks_text(proof: DynamicProof) -> str:
    """`torch._dynamo.mark_dynamic(x, 0)`, one call per input, as the user writes it before calling."""
    return "; ".join(
        f"torch._dynamo.mark_dynamic({name}, {dims[0] if len(dims) == 1 else dims})" for name, dims in proof.marks
    )


def sizes_text(proof: DynamicProof) -> str:
    """`x.shape[0] 4 → 8`: each varying size, at the example and grown."""
    first, second = [*proof.sizes, [], []][:2]
    parts = []
    for index, (name, dims) in enumerate(proof.marks):
        for position, dim in enumerate(dims):
            before = first[index][position] if index < len(first) and position < len(first[index]) else "?"
            after = second[index][position] if index < len(second) and position < len(second[index]) else "?"
            parts.append(f"{name}.shape[{dim}] {before} → {after}")
    return ", ".join(parts)


def proof_title(proof: DynamicProof) -> str:
    """The code action's title: what it does and its proof, in numbers."""
    return (
        f"Compile with dynamic=True — recompiles {proof.static_recompiles} → {proof.dynamic_recompiles} "
        f"across {sizes_text(proof)}, outputs {proof.outputs.split(' (')[0]} to eager on 2 sizes"
    )


def proof_lines(code: Style, proof: DynamicProof) -> list[str]:
    """What running it at two sizes showed (worker/levels/recompiles.py), for the hover on `forward`."""
    if not proof.marks:
        return [f"no proof that its sizes can vary: {proof.error}"] if proof.error else []
    if proof.error:
        named = ", ".join(f"{name}.shape[{dim}]" for name, dims in proof.marks for dim in dims)
        return [f"sizes that would vary ({named}) cannot: run at a larger size, {proof.error}"]
    sizes = sizes_text(proof)
    lines = [
        f"sizes that vary: {sizes} (run on both, as compiled, on CPU) — as compiled, the second size compiles "
        f"again: {proof.static_recompiles} recompile{'s' if proof.static_recompiles != 1 else ''}"
    ]
    lines.append(
        f"- with {code('torch.compile(..., dynamic=True)')}: {proof.dynamic_recompiles} recompiles, outputs "
        f"{proof.outputs} to eager at both sizes"
    )
    if proof.marked_recompiles is not None:
        lines.append(f"- with {code(marks_text(proof))} before the call: {proof.marked_recompiles} recompiles")
    elif proof.marked_error:
        lines.append(f"- torch refuses {code(marks_text(proof))}: {proof.marked_error}")
    return ["\n".join(lines)]

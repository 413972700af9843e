"""A pass's result as text (pure): the preview the editor opens and `fxlens pass` prints.

Markdown that reads as plain text in a terminal: counts, the changed nodes, the verdict, the diff of
the printouts, the generated code after.
"""

from __future__ import annotations

import math
import os

from fxlens.pass_report import NodeChange, OutputCheck, PassInfo, PassReport, Proof
from fxlens.report import OPCODES, Diagnostic

_VERDICT_WORDS = {
    "equal": "the outputs are equal bit for bit",
    "close": "the outputs agree within the tolerance",
    "changes results": "the pass CHANGES RESULTS",
    "quantized": "a quantization pass: the change is expected, given as numbers",
    "not run": "no proof",
}


def headline(report: PassReport) -> str:
    counts = f"{report.total_before} → {report.total_after} nodes" if report.ok else "failed"
    return f"{report.pass_name} on {report.class_name}: {counts} — {report.proof.verdict if report.ok else 'no result'}"


def _counts(report: PassReport) -> list[str]:
    rows = ["| opcode | before | after |", "|---|---:|---:|"]
    for op in OPCODES:
        before, after = report.counts_before.get(op, 0), report.counts_after.get(op, 0)
        if before or after:
            rows.append(f"| {op} | {before} | {after}{'' if before == after else ' ←'} |")
    rows.append(f"| **total** | {report.total_before} | {report.total_after} |")
    return rows


def _quoted(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def change_line(change: NodeChange) -> str:
    where = f" (line {change.line})" if change.line else ""
    if change.change == "retargeted":
        return f"- retargeted `{change.name}`: {change.before} → {change.op}[{change.target}]{where}"
    text = f"- {change.change} `{change.name}`: {change.op}[{change.target}]{where}"
    if change.detail:
        text += f" — {change.detail}"
    # in place of the nodes it stands for, which are gone; after those still there, whose users it took
    found = [
        f"in place of {_quoted(change.replaces)}" if change.replaces else "",
        f"taking over the users of {_quoted(change.took_users_of)}" if change.took_users_of else "",
    ]
    if any(found):
        text += ", " + ", ".join(f for f in found if f) + " (node.meta['from_node'])"
    return text


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.4g}{unit}"


def _output_row(check: OutputCheck) -> str:
    name = check.path or f"{check.index}"
    shape = f"({', '.join(map(str, check.shape))}) {check.dtype}" if check.shape is not None else ""
    sqnr = "∞" if check.equal else _number(check.sqnr_db, " dB")
    equal = "yes" if check.equal else "no"
    return f"| {name} {shape} | {equal} | {_number(check.max_abs_diff)} | {sqnr} | {check.where} |"


def proof_lines(proof: Proof, title: str = "Proof") -> list[str]:
    if proof.verdict == "not run":
        return [f"**{title}: not run** — {proof.why_not or 'the pass did not give a graph'}"]
    lines = [
        f"**{title}: {proof.verdict}** — {_VERDICT_WORDS[proof.verdict]}"
        + (f"; first difference: {proof.first_difference}" if proof.first_difference else ""),
        f"{proof.draws} draws ({proof.tensors}); close means torch.allclose(rtol={proof.rtol:g}, atol={proof.atol:g})",
        "",
        "| output | torch.equal | max abs diff | SQNR | largest at |",
        "|---|---|---:|---:|---|",
    ]
    lines += [_output_row(check) for check in proof.outputs]
    if proof.converted is not None:
        lines += ["", *proof_lines(proof.converted, "After convert_fx (int8), against the original")]
    return lines


def diagnostic_text(path: str, d: Diagnostic) -> str:
    shown = os.path.relpath(path) if os.path.isabs(path) else path
    text = f"{shown}:{d.line}:{d.col + 1}: {d.severity}: {d.message} [{d.category}]"
    return text + (f"\n  fix: {d.fix}" if d.fix else "")


def pass_markdown(report: PassReport) -> str:
    lines = [f"## {headline(report)}", ""]
    if report.diagnostics:
        lines += [diagnostic_text(report.pass_path or report.path, d) for d in report.diagnostics] + [""]
    if report.counts_before:
        lines += [*_counts(report), ""]
    if report.ok:
        lines += ["**Changed nodes**" if report.changes else "**No node changed**"]
        lines += [change_line(c) for c in report.changes] + [""]
        lines += [*proof_lines(report.proof), ""]
        if report.diff:
            lines += ["**Printout, before → after**", "```diff", report.diff, "```", ""]
        lines += ["**Generated code after**", "```python", report.code_after.strip(), "```"]
    return "\n".join(lines).rstrip() + "\n"


def pass_list(infos: list[PassInfo]) -> str:
    lines = []
    for info in infos:
        where = f" ({os.path.relpath(info.path)}:{info.line})" if info.kind == "user" and info.path else ""
        lines.append(f"{info.name:<18} {info.kind:<8} {info.what}{where}".rstrip())
    return "\n".join(lines)

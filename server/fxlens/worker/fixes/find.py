"""The fixes of one traced class: each finding's site, the rewrites of TABLE that know it, in order, until one's
proof passes (or none is left: the finding says why the first proven-and-failed rewrite failed, else why the
last rewrite that knew the site declined it: the later rewrites cover more)."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fxlens.fix_report import Fix
from fxlens.report import Diagnostic
from fxlens.worker.fixes import TABLE, Entry
from fxlens.worker.fixes.proof import ClassUnderFix, Declared, FileUnderFix, prove, running
from fxlens.worker.fixes.sites import Declined, Rewrite, Site
from fxlens.worker_requests import LostProof

MAX_PROOFS = 2  # per site: a second rewrite is proven only when the first one's proof failed
# how long one proof may run before the worker stops it (its fix then not proven): this many times what it is likely
# to take, and never less than PROOF_SECONDS_AT_LEAST. The likely cost counts the re-trace only: a torch.cond proof
# compiles what the class's own trace never did (5-6 s against an estimate of 2 s, tests/fixtures/fixes, 2 cores
# shared), and a loaded machine doubles that
PROOF_TIMES_NEEDED = 5
PROOF_SECONDS_AT_LEAST = 30.0
# how long a rewrite may run: syntax work of milliseconds, but it reads the objects the line names, and their own
# `__eq__` or `__getattr__` runs then (a hang there costs this, and the fix: worker/process/lost_proofs.py)
REWRITE_SECONDS = 10.0


@dataclass
class Watch:
    """What the proofs of one request are held to."""

    deadline: float | None = None  # the request's (time.monotonic()): a proof that could not end before is not started
    # fix id ("" for every fix) -> why it is not proven: its proof hung or crashed the trace process in an earlier run
    # of this request (worker/process/lost_proofs.py), so it is not run again
    lost: dict[str, LostProof] = field(default_factory=dict)
    # told the fix whose step ("rewrite", "proof") starts and the seconds it may take, ("", 0) when it ends
    # (process/child_location.py)
    proving: Callable[[str, float, str], None] = lambda fix_id, seconds, step: None


def _sites(cls: ClassUnderFix) -> dict[int, list[Diagnostic]]:
    """Findings by line: fx and dynamo often report the same statement (at different columns), which one
    rewrite fixes at every level."""
    found: dict[int, list[Diagnostic]] = {}
    for level, result in cls.results.items():
        for diagnostic in result.diagnostics:
            if diagnostic.severity in ("error", "warning") and diagnostic.level == level:
                found.setdefault(diagnostic.line, []).append(diagnostic)
    return found


def _fix_id(entry: Entry, cls: ClassUnderFix, site: Site) -> str:
    return f"{entry.name}:{cls.name}:{site.diagnostic.line}:{site.diagnostic.col}"


def _proposed(entry: Entry, cls: ClassUnderFix, site: Site, watch: Watch) -> Rewrite | Declined | None:
    lost = watch.lost.get(_fix_id(entry, cls, site)) or watch.lost.get("")
    if lost is not None and lost.step == "rewrite":  # (it took the process down in an earlier run of this request)
        return Declined(entry.name, lost.why)
    watch.proving(_fix_id(entry, cls, site), REWRITE_SECONDS, "rewrite")
    try:
        return entry.propose(site)
    except (Exception, SystemExit, KeyboardInterrupt) as error:  # noqa: BLE001  fxlens's own rewrite failing on odd
        # code, or an object the line names raising from its own `__eq__`: said, never raised
        return Declined(entry.name, f"the rewrite failed on this code ({type(error).__name__}: {error})")
    finally:
        watch.proving("", 0.0, "rewrite")


def _fix(entry: Entry, cls: ClassUnderFix, site: Site, proposed: Rewrite | Declined) -> Fix:
    first = site.diagnostic
    fix = Fix(
        _fix_id(entry, cls, site),
        entry.name,
        proposed.title,
        cls.name,
        first.level or "",
        first.category,
        first.line,
        first.col,
        first.end_line,
        first.end_col,
    )
    if isinstance(proposed, Declined):
        fix.proof.failed = proposed.why
    else:
        fix.what, fix.edits = proposed.what, proposed.edits
    return fix


def _declared(proposed: Rewrite | Declined) -> Declared:
    if not isinstance(proposed, Rewrite):
        return Declared()
    return Declared(proposed.changes_inputs, proposed.unclaimed)


def _needed(cls: ClassUnderFix, levels: list[str]) -> float:
    """What a proof is likely to take: the class's trace at those levels again, and a margin for the rest."""
    return 1.0 + 2 * sum(cls.results[level].seconds for level in levels)


def _proven(
    file: FileUnderFix, cls: ClassUnderFix, fix: Fix, levels: list[str], declared: Declared, watch: Watch
) -> None:
    needed = _needed(cls, levels)
    lost = watch.lost.get(fix.id) or watch.lost.get("")
    if lost is not None:
        fix.proof.failed = lost.why + running(file.text, fix.edits, lost.line)
    elif watch.deadline is not None and time.monotonic() + needed > watch.deadline:
        fix.proof.failed = "not proven: the trace's time limit (fxlens.timeoutSeconds, --timeout) came first"
    else:
        watch.proving(fix.id, max(PROOF_SECONDS_AT_LEAST, PROOF_TIMES_NEEDED * needed), "proof")
        try:
            fix.proof = prove(file, cls, fix.edits, levels, declared)
        finally:
            watch.proving("", 0.0, "proof")


def _other_class(tree: ast.Module, node: ast.ClassDef, line: int) -> str:
    """The name of the file's other class whose body holds `line` ("" when none does)."""
    return next(
        (
            other.name
            for other in tree.body
            if isinstance(other, ast.ClassDef) and other is not node and other.lineno <= line <= (other.end_lineno or 0)
        ),
        "",
    )


def fixes_for(file: FileUnderFix, cls: ClassUnderFix, watch: Watch | None = None) -> list[Fix]:
    watch = watch or Watch()
    tree = file.syntax()
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name), None)
    if node is None:
        return []
    fixes: list[Fix] = []
    for findings in (found for _, found in sorted(_sites(cls).items())):
        owner = _other_class(tree, node, findings[0].line)
        if owner:  # a child's line, reached through it: the child's own report carries its fix
            d = findings[0]
            where = (d.line, d.col, d.end_line, d.end_col)
            fix = Fix(
                f"elsewhere:{cls.name}:{d.line}:{d.col}", "", "No fix here", cls.name, d.level or "", d.category, *where
            )
            fix.proof.failed = f"the line is `{owner}`'s code, run by `{cls.name}`: the fix, or why none, is there"
            fixes.append(fix)
            continue
        levels = sorted({d.level for d in findings if d.level in cls.results}, key=list(cls.results).index)
        instance = cls.example.instance
        sites = [Site(d, file.text, tree, node, file.namespace, tuple(levels), instance) for d in findings]
        tried: list[Fix] = []
        for entry in TABLE:
            site = next((s for s in sites if entry.applies(s)), None)
            proposed = _proposed(entry, cls, site, watch) if site is not None else None
            if site is None or proposed is None:
                continue
            fix = _fix(entry, cls, site, proposed)
            same = next((f for f in fixes if f.edits == fix.edits and f.proven), None) if fix.edits else None
            if same is not None:  # (an `elif`'s site: its `if`'s rewrite, proven already)
                fix.proof = same.proof
            elif fix.edits:
                _proven(file, cls, fix, levels, _declared(proposed), watch)
            tried.append(fix)
            lost = fix.id in watch.lost or "" in watch.lost  # (the next rewrites would read or run the same code)
            if fix.proven or lost or sum(bool(f.edits) for f in tried) >= MAX_PROOFS:
                break
        if tried:
            fixes.append(next((f for f in tried if f.proven), next((f for f in tried if f.edits), tried[-1])))
    return fixes

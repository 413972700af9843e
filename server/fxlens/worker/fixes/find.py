"""The fixes of one traced class: each finding's site, the first rewrite of TABLE that knows it, its proof."""

from __future__ import annotations

import ast

from fxlens.fix_report import Fix
from fxlens.report import Diagnostic
from fxlens.worker.fixes import TABLE
from fxlens.worker.fixes.proof import ClassUnderFix, FileUnderFix, prove
from fxlens.worker.fixes.sites import Declined, Site


def _sites(cls: ClassUnderFix) -> dict[tuple[int, int], list[Diagnostic]]:
    """Findings by position: fx and dynamo often report the same line, which one rewrite fixes at both levels."""
    found: dict[tuple[int, int], list[Diagnostic]] = {}
    for level, result in cls.results.items():
        for diagnostic in result.diagnostics:
            if diagnostic.severity in ("error", "warning") and diagnostic.level == level:
                found.setdefault((diagnostic.line, diagnostic.col), []).append(diagnostic)
    return found


def fixes_for(file: FileUnderFix, cls: ClassUnderFix, tree: ast.Module) -> list[Fix]:
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name), None)
    if node is None:
        return []
    fixes: list[Fix] = []
    for (line, col), findings in sorted(_sites(cls).items()):
        for entry in TABLE:
            sites = (Site(d, file.text, tree, node, file.namespace) for d in findings)
            site = next((s for s in sites if entry.applies(s)), None)
            if site is None:
                continue
            try:
                proposed = entry.propose(site)
            except Exception as error:  # noqa: BLE001  fxlens's own rewrite failing on odd code: said, never raised
                proposed = Declined(entry.name, f"the rewrite failed on this code ({type(error).__name__}: {error})")
            if proposed is None:
                continue
            first = site.diagnostic
            fix = Fix(
                f"{entry.name}:{cls.name}:{line}:{col}",
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
                levels = sorted({d.level for d in findings if d.level in cls.results}, key=list(cls.results).index)
                fix.proof = prove(file, cls, proposed.edits, levels)
            fixes.append(fix)
            break
    return fixes

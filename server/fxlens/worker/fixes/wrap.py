"""A module-level helper that symbolic_trace cannot trace into → `torch.fx.wrap("helper")` after its `def`:
fx records one call of it instead. The cost, said in the fix: the graph no longer shows the helper's ops (a
graph pass cannot see inside it); torch.export and torch.compile still trace into it."""

from __future__ import annotations

import ast

from fxlens.fix_report import TextEdit
from fxlens.worker.fixes.sites import Declined, Rewrite, Site, holds


def applies(site: Site) -> bool:
    return site.diagnostic.level == "fx"


def propose(site: Site) -> Rewrite | Declined | None:
    d = site.diagnostic
    helper = next(
        (n for n in site.tree.body if isinstance(n, ast.FunctionDef) and holds(n, d.line, d.col)),
        None,
    )
    if helper is None:
        return None
    torch = site.torch_name()
    if torch is None:
        return Declined(f"Wrap `{helper.name}`", "the file does not import torch")
    if helper.decorator_list:
        return Declined(
            f"Wrap `{helper.name}`", "the helper is decorated: torch.fx.wrap would wrap the undecorated name"
        )
    end = helper.end_lineno or helper.lineno
    end_col = helper.end_col_offset or 0
    insert = TextEdit(end, end_col, end, end_col, f'\n\n\n{torch}.fx.wrap("{helper.name}")', "")
    return Rewrite(
        f"Make `{helper.name}` one fx node (torch.fx.wrap)",
        f"symbolic_trace records one call of `{helper.name}` instead of tracing into it: its ops are no longer "
        "nodes of the fx graph (a graph pass cannot see or change them); torch.export and torch.compile still "
        "trace into it.",
        [insert],
    )

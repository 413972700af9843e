"""`assert` on a tensor's value → `torch._assert(cond, message)`: the same check in eager (an AssertionError
with the same message), and a graph node where a tracer meets it, instead of Python asking for a bool. Unlike
`assert`, it also runs under `python -O`."""

from __future__ import annotations

import ast

from fxlens.worker.fixes.sites import Declined, Rewrite, Site

TITLE = "Use torch._assert"


def applies(site: Site) -> bool:
    d = site.diagnostic
    return d.category == "data-dependent-control-flow" or (d.category == "graph-break" and d.gb_id == "GB0170")


def propose(site: Site) -> Rewrite | Declined | None:
    statement = site.statement_at()
    if not isinstance(statement, ast.Assert):
        return None
    torch = site.torch_name()
    if torch is None:
        return Declined(TITLE, "the file does not import torch")
    message = site.segment(statement.msg) if statement.msg is not None else repr(ast.unparse(statement.test))
    test = site.segment(statement.test)
    if set(site.levels) <= {"fx"}:
        return Rewrite(
            TITLE,
            "The check stays, as one graph node (`torch._assert`): eager raises the same AssertionError.",
            [site.replace(statement, f"{torch}._assert({test}, {message})")],
        )
    # export and dynamo guard on torch._assert's bool; the async assert is an op they record
    return Rewrite(
        "Use torch._assert_async",
        "The check stays, as one graph node (`torch._assert_async`) that export and torch.compile record; the "
        "cost: a failing check raises RuntimeError with the same message, not AssertionError.",
        [site.replace(statement, f"{torch}._assert_async({test}, {message})")],
    )

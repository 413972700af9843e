"""The worker counts lines as the editor does (fxlens.lines): files with old Mac line endings, form-feed
page breaks and strings holding U+2028 / U+0085 get their report, their directives are found, and every
node's span points at the characters that made it."""

from __future__ import annotations

import asyncio

import pytest
from fxlens import lines
from fxlens.engine.worker_client import TraceOptions, WorkerClient

# sections separated by form feeds (Emacs page breaks, as in CPython's own sources), a docstring
# pasted from a PDF (U+2028), a NEL inside a constant, and the directive below all of them
MODEL = '''"""Widening blocks.\u2028See the paper, section 3.\u2028"""
import torch
from torch import nn

\x0c
# -- helpers --------------------------------------------------------------
SEPARATOR = "a\x85b\x1cc"


\x0c
# fxlens: Widen(width=32)(torch.randn(5, 8))
class Widen(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x):
        y = self.fc(x)  # \u2028 a comment with a line separator
        return torch.relu(y) * 2
'''

TEXTS = {
    "page_breaks": MODEL,
    "mac_endings": MODEL.replace("\n", "\r"),
    "windows_endings": MODEL.replace("\n", "\r\n"),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("line_model")

    async def analyse_all():
        client = WorkerClient()
        await client.start()
        try:
            result = {}
            for name, text in TEXTS.items():
                path = folder / f"{name}.py"
                path.write_bytes(text.encode())
                result[name] = await client.analyse(str(path), text, TraceOptions(levels=["fx", "aten"]))
            return result
        finally:
            await client.stop()

    return asyncio.run(analyse_all())


def _segment(text: str, node) -> str:
    line = lines.split(text)[node.line - 1]
    return line.encode()[node.col : node.end_col].decode()


@pytest.mark.parametrize("name", list(TEXTS))
def test_the_directive_below_page_breaks_and_line_separators_builds_the_class(reports, name):
    widen = reports[name].find_class("Widen")
    assert not [d for d in reports[name].all_diagnostics() if d.severity == "error"], reports[name].all_diagnostics()
    assert widen is not None and widen.build.how == "directive"
    assert widen.line == 12 and widen.levels["fx"].ok and widen.levels["aten"].ok


@pytest.mark.parametrize("name", list(TEXTS))
def test_every_node_span_points_at_the_code_that_made_it(reports, name):
    widen = reports[name].find_class("Widen")
    fx = {n.name: n for n in widen.levels["fx"].nodes}
    assert (fx["fc"].line, _segment(TEXTS[name], fx["fc"])) == (18, "self.fc(x)")
    assert (fx["relu"].line, _segment(TEXTS[name], fx["relu"])) == (19, "torch.relu(y)")
    # export's stack traces carry lines, not columns: an aten node spans its statement
    aten = [n for n in widen.levels["aten"].nodes if n.op == "call_function"]
    assert {(n.line, _segment(TEXTS[name], n).split("  #")[0]) for n in aten} == {
        (18, "y = self.fc(x)"),
        (19, "return torch.relu(y) * 2"),
    }

"""Where a proof that hung or crashed was (worker/fixes/proof.py's `running`): the worker knows a line of the fixed
text (the proof runs it under the file's path); the user reads the original, so the line is said as the original's,
with the code that ran. A torch.where rewrite makes four lines one, moving every line after it up by three."""

from __future__ import annotations

from fxlens.fix_report import TextEdit, apply_edits
from fxlens.worker.fixes.proof import running

ORIGINAL = """\
def forward(self, x):
    h = self.proj(x)
    if h.mean() > 0:
        out = x + h
    else:
        out = x - h
    return self._native(out)
"""
WHERE = TextEdit(
    3,
    4,
    6,
    19,
    "out = torch.where(h.mean() > 0, x + h, x - h)",
    "if h.mean() > 0:\n        out = x + h\n    else:\n        out = x - h",
)


def test_a_line_after_the_edit_is_said_as_the_original_line():
    fixed = apply_edits(ORIGINAL, [WHERE]).splitlines()
    assert fixed[3] == "    return self._native(out)"  # line 4 of the fixed text
    assert running(ORIGINAL, [WHERE], 4) == " (it was running line 7: `return self._native(out)`)"


def test_a_line_of_the_edit_is_said_as_fixed_and_a_line_before_it_as_it_is():
    assert running(ORIGINAL, [WHERE], 3) == (
        " (it was running line 3 as fixed: `out = torch.where(h.mean() > 0, x + h, x - h)`)"
    )
    assert running(ORIGINAL, [WHERE], 2) == " (it was running line 2: `h = self.proj(x)`)"


def test_an_unknown_line_says_nothing():
    assert running(ORIGINAL, [WHERE], 0) == "" and running(ORIGINAL, [WHERE], 99) == ""

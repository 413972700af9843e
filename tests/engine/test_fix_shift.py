"""A class's fixes carried through edits like its diagnostics: a fix below an edit moves with its lines, one
whose edited lines were themselves edited is dropped (its proof was of another text)."""

from __future__ import annotations

from fxlens.engine.shift import LineMap, shift_class
from fxlens.fix_report import Fix, FixProof, TextEdit, apply_edits
from fxlens.report import ClassReport

TEXT = """class Gate:
    def forward(self, x):
        if x.sum() > 0:
            y = x
        else:
            y = -x
        return y
"""
OLD = "if x.sum() > 0:\n            y = x\n        else:\n            y = -x"


def _report() -> ClassReport:
    edit = TextEdit(3, 8, 6, 18, "y = torch.where(x.sum() > 0, x, -x)", OLD)
    fix = Fix("torch-where:Gate:3:11", "torch-where", "Replace", "Gate", "fx", "x", 3, 11, 3, 22, edits=[edit])
    fix.proof = FixProof(proven=True)
    return ClassReport("Gate", 1, 7, fixes=[fix])


def test_a_fix_below_an_edit_moves_with_its_lines_and_still_applies():
    text = "import torch\n\n" + TEXT
    moved = shift_class(_report(), LineMap(TEXT, text))
    (fix,) = moved.fixes
    assert (fix.line, fix.edits[0].line, fix.edits[0].end_line) == (5, 5, 8)
    assert "y = torch.where(x.sum() > 0, x, -x)" in apply_edits(text, fix.edits)


def test_a_fix_whose_lines_were_edited_is_dropped():
    text = TEXT.replace("y = -x", "y = -2 * x")
    assert shift_class(_report(), LineMap(TEXT, text)).fixes == []

"""fix_report: the one way a fix changes a text, refusing a text that no longer holds what it replaces."""

from __future__ import annotations

import pytest
from fxlens.fix_report import Fix, FixProof, StaleFix, TextEdit, apply_edits, apply_fixes, fix_from_json, shifted_line
from fxlens.report import ClassReport, class_from_json, to_json

TEXT = "def f(x):\n    if x:\n        y = 1\n    else:\n        y = 2\n    return y  # é\n"


def _where() -> TextEdit:
    return TextEdit(2, 4, 5, 13, "y = where(x, 1, 2)", "if x:\n        y = 1\n    else:\n        y = 2")


def test_an_edit_replaces_its_range_and_later_lines_move_up():
    after = apply_edits(TEXT, [_where()])
    assert after == "def f(x):\n    y = where(x, 1, 2)\n    return y  # é\n"
    assert shifted_line(6, [_where()]) == 3 and shifted_line(1, [_where()]) == 1


def test_columns_are_utf8_bytes_as_in_the_report():
    text = "s = 'é'; t = max(a, b)\n"
    col = len("s = 'é'; t = ".encode())
    edit = TextEdit(1, col, 1, col + len("max(a, b)"), "maximum(a, b)", "max(a, b)")
    assert apply_edits(text, [edit]) == "s = 'é'; t = maximum(a, b)\n"


def test_a_changed_text_or_overlapping_edits_are_refused():
    with pytest.raises(StaleFix):
        apply_edits(TEXT.replace("y = 1", "y = 3"), [_where()])
    with pytest.raises(StaleFix):
        apply_edits(TEXT, [_where(), TextEdit(3, 8, 3, 13, "z = 1", "y = 1")])


def test_apply_fixes_takes_proven_fixes_only_and_skips_one_that_overlaps():
    proven = Fix("a", "torch-where", "t", "C", "fx", "x", 2, 4, 5, 13, edits=[_where()], proof=FixProof(proven=True))
    later = Fix("b", "r", "t", "C", "fx", "x", 3, 8, 3, 13, edits=[TextEdit(3, 8, 3, 13, "z", "y = 1")])
    later.proof.proven = True
    unproven = Fix("c", "r", "t", "C", "fx", "x", 6, 4, 6, 12, edits=[TextEdit(6, 4, 6, 12, "return 0", "return y")])
    text, applied = apply_fixes(TEXT, [later, unproven, proven])
    assert [f.id for f in applied] == ["a"] and "return y" in text


def test_fixes_cross_in_the_class_report_json():
    fix = Fix("a", "torch-where", "Replace", "C", "fx", "x", 2, 4, 5, 13, edits=[_where()], proof=FixProof(proven=True))
    cls = ClassReport("C", 1, 9, fixes=[fix])
    again = class_from_json(to_json(cls))
    assert again.fixes == [fix] and fix_from_json(to_json(fix)) == fix

"""A drafted directive (draft_report.Draft) written out: positional values first, each unknown as the placeholder
that names it, the constructor alone when fxlens is to find the inputs; and the lens's word for what is
missing, never `untraceable` for a class whose only problem is fxlens's guess."""

from __future__ import annotations

from fxlens.draft_report import Draft, DraftValue, placeholder
from fxlens.render.draft import action_title, directive_text, missing_lines
from fxlens.render.lens import class_lenses
from fxlens.report import Build, ClassReport, Diagnostic, LevelResult, Node, class_from_json, to_json


def _draft(**changes) -> Draft:
    values = {
        "constructor": "CifarNet",
        "missing": "guess",
        "arguments": [DraftValue("unit", "PlainUnit", "guessed"), DraftValue("stages", "", "nothing says")],
        "inputs": [DraftValue("x", "", "first used by Conv2d (3 input channels)", keyword=False)],
        "problem": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x25088 and 512x10)",
    }
    return Draft(**{**values, **changes})


def test_unknowns_are_placeholders_named_for_their_parameter():
    assert directive_text(_draft()) == "CifarNet(unit=PlainUnit, stages=FILL_stages)(FILL_x)"
    assert placeholder("args[1]") == "FILL_args_1"


def test_positional_values_come_first_and_keyword_inputs_by_name():
    draft = _draft(
        arguments=[DraftValue("depth", "2"), DraftValue("width", "64", keyword=False)],
        inputs=[DraftValue("mask", "torch.ones(2, 8)"), DraftValue("x", "torch.randn(2, 8, 64)", keyword=False)],
    )
    assert directive_text(draft) == "CifarNet(64, depth=2)(torch.randn(2, 8, 64), mask=torch.ones(2, 8))"


def test_without_inputs_the_directive_only_builds():
    assert directive_text(_draft(inputs=None)) == "CifarNet(unit=PlainUnit, stages=FILL_stages)"
    assert directive_text(_draft(built="pkg.make().get_submodule('head')", inputs=None)) == (
        "pkg.make().get_submodule('head')"
    )


def test_the_title_and_the_hover_say_what_is_left_to_fill_in():
    draft = _draft()
    assert action_title(draft) == "Draft a `# fxlens:` directive (fill in `stages` and `x`)"
    assert action_title(_draft(arguments=[], inputs=None)) == "Draft a `# fxlens:` directive"
    head, problem = missing_lines(draft)
    assert head.startswith("**Guess failed**: fill in `stages` (nothing says), `x` (first used by Conv2d")
    assert head.endswith("`# fxlens: CifarNet(unit=PlainUnit, stages=FILL_stages)(FILL_x)`")
    assert problem == f"last guess: {draft.problem}"
    assert missing_lines(draft, markdown=False)[0].startswith("Guess failed: fill in stages (nothing says)")


def test_the_draft_crosses_as_json():
    report = ClassReport("CifarNet", 3, 40, draft=_draft())
    assert class_from_json(to_json(report)).draft == report.draft
    assert class_from_json(to_json(ClassReport("Plain", 1, 2))).draft is None


def _report(how: str, source: str, draft: Draft | None, fx: LevelResult) -> ClassReport:
    return ClassReport(
        "CifarNet",
        3,
        40,
        build=Build(how, source),
        draft=draft,
        levels={"fx": fx, "aten": LevelResult("aten", False, note="no example inputs: torch.export needs them")},
    )


FX = LevelResult("fx", True, nodes=[Node("x", "placeholder", "x", 1), Node("output", "output", "output", 0)])


def _summary(report: ClassReport) -> str:
    return [lens.title for lens in class_lenses(report, ("fx", "aten"))][1]


def test_the_lens_says_what_is_missing_never_untraceable():
    assert _summary(_report("guessed", "none", _draft(), FX)) == "fx 2 · aten guess failed"
    assert _summary(_report("no-arguments", "none", _draft(missing="inputs"), FX)) == "fx 2 · aten no inputs"
    # a report from a worker without drafts (or a class with a directive) still says it from its build
    assert _summary(_report("directive", "none", None, FX)) == "fx 2 · aten no inputs"
    error = Diagnostic(3, 0, 3, 10, "error", "construction", "fxlens cannot build CifarNet: ...")
    unbuilt = _report("unbuilt", "none", _draft(missing="construction"), LevelResult("fx", False, diagnostics=[error]))
    assert _summary(unbuilt) == "fx cannot build, line 3 · aten cannot build"


def test_a_real_failure_of_the_code_stays_untraceable():
    failed = LevelResult("aten", False, diagnostics=[Diagnostic(9, 4, 9, 20, "error", "control-flow", "if x.sum()")])
    report = _report("no-arguments", "inferred", None, FX)
    report.levels["aten"] = failed
    assert _summary(report) == "fx 2 · aten untraceable, line 9"

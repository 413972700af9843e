"""A class fxlens has no graph for gets a drafted directive (draft_report.Draft): applied as drafted, the
diagnostic names the value still to fill in and the fx level traces on; filled in, the class traces and
torch agrees with every node."""

from __future__ import annotations

from pathlib import Path

import pytest
from fxlens.render.draft import directive_text
from fxlens.render.lens import class_lenses
from fxlens_command import fxlens
from torch_reference import analyse, expected, reported

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "drafts" / "detect_head.py"


def _with_directive(tmp_path: Path, class_name: str, directive: str) -> Path:
    """The fixture with `# fxlens: <directive>` written above `class_name`, as the code action inserts it."""
    path = tmp_path / FIXTURE.name
    text = FIXTURE.read_text().replace(f"class {class_name}(", f"# fxlens: {directive}\nclass {class_name}(", 1)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def report():
    return analyse([FIXTURE])[FIXTURE.stem]


def test_a_forward_nothing_can_feed_gets_a_draft_with_its_input_marked(report):
    cls = report.find_class("PointEncoder")
    assert cls.levels["fx"].ok and not cls.levels["aten"].ok
    draft = cls.draft
    assert draft is not None and draft.missing == "guess"  # fxlens tried a tensor; forward reads `.coords`
    assert directive_text(draft) == "PointEncoder()(FILL_batch)"
    (unknown,) = draft.unknowns()
    assert unknown.name == "batch" and unknown.source == "first used by Linear (7 features)"
    assert "no attribute 'coords'" in draft.problem
    summary = [lens.title for lens in class_lenses(cls, ("fx", "aten"))][1]
    assert summary.startswith("fx ") and summary.endswith("· aten guess failed") and "untraceable" not in summary


def test_a_constructor_fxlens_guessed_is_drafted_with_its_guesses(report):
    cls = report.find_class("AnchorHead")
    assert cls.build.how == "guessed" and cls.draft is not None
    (argument,) = cls.draft.arguments
    assert argument.name == "anchors" and argument.known and argument.text == cls.build.detail.split("=", 1)[1]
    assert [v.name for v in cls.draft.unknowns()] == ["features"]
    assert directive_text(cls.draft) == f"AnchorHead({cls.build.detail})(FILL_features)"


def test_applied_as_drafted_the_diagnostic_names_the_value_to_fill_in(report, tmp_path):
    drafted = directive_text(report.find_class("PointEncoder").draft)
    path = _with_directive(tmp_path, "PointEncoder", drafted)
    cls = analyse([path])[path.stem].find_class("PointEncoder")
    assert cls.build.how == "directive" and cls.draft is None
    assert cls.levels["fx"].ok  # built from the directive's constructor: fx needs no inputs
    (note,) = [d for d in cls.levels["fx"].diagnostics if d.category == "placeholder"]
    assert note.line == cls.line - 1 and note.severity == "warning"
    assert "`batch` of `PointEncoder.forward`" in note.message and "FILL_batch" in note.message
    assert [d.category for d in cls.levels["fx"].diagnostics] == ["placeholder"]  # no guess on top of it


def test_a_placeholder_in_the_constructor_is_an_error_naming_it(tmp_path):
    path = _with_directive(tmp_path, "AnchorHead", "AnchorHead(anchors=FILL_anchors)(FILL_features)")
    cls = analyse([path])[path.stem].find_class("AnchorHead")
    (error,) = cls.levels["fx"].diagnostics
    assert error.category == "placeholder" and error.severity == "error" and error.line == cls.line - 1
    assert "`anchors` of `AnchorHead.__init__`" in error.message
    assert [lens.title for lens in class_lenses(cls, ("fx", "aten"))][1].startswith("fx cannot build")


def test_filled_in_the_draft_traces_as_torch_does(report, tmp_path):
    drafted = directive_text(report.find_class("PointEncoder").draft)
    filled = drafted.replace("FILL_batch", "PointBatch(torch.randn(2, 16, 3), torch.randn(2, 16, 4))")
    path = _with_directive(tmp_path, "PointEncoder", filled)
    fresh = analyse([path])[path.stem]
    cls = fresh.find_class("PointEncoder")
    assert cls.draft is None and cls.build.inputs_source == "directive"
    assert reported(cls, "fx") == expected(path, fresh, cls, "fx")
    assert [n.shape for n in cls.levels["fx"].nodes if n.op == "output"] == [[2, 32]]


def test_a_guess_the_constructor_rejects_is_marked_unknown_with_the_line_that_rejects_it(report):
    cls = report.find_class("FrozenProbe")
    assert cls.build.how == "unbuilt" and cls.draft is not None and cls.draft.missing == "guess"
    assert directive_text(cls.draft) == "FrozenProbe(backbone=FILL_backbone, feature_dim=64)"
    (unknown,) = cls.draft.unknowns()
    line = FIXTURE.read_text().split("\n").index("        self.backbone = backbone.eval()") + 1
    assert unknown.name == "backbone" and unknown.source.startswith(f"line {line} rejects fxlens's guess `")
    assert [lens.title for lens in class_lenses(cls, ("fx", "aten"))][1].startswith("fx guess failed")


def test_a_filled_in_value_the_constructor_rejects_is_named_by_the_diagnostic(tmp_path):
    path = _with_directive(tmp_path, "FrozenProbe", "FrozenProbe(backbone=PointEncoder, feature_dim=64)")
    cls = analyse([path])[path.stem].find_class("FrozenProbe")
    error, note = cls.levels["fx"].diagnostics
    line = path.read_text().split("\n").index("        self.backbone = backbone.eval()") + 1
    assert error.line == line and error.message.endswith(f"line {cls.line - 1}, its `backbone=PointEncoder`)")
    assert (
        error.fix
        == f"Change the directive's `backbone=PointEncoder`: line {line} of `FrozenProbe.__init__` rejects it."
    )
    assert note.line == cls.line - 1 and "from its `backbone=PointEncoder`" in note.message


def test_the_constructor_filled_in_builds_and_fxlens_finds_the_inputs_torch_agrees_with(report, tmp_path):
    drafted = directive_text(report.find_class("FrozenProbe").draft)
    backbone = "torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1))"
    filled = drafted.replace("FILL_backbone", backbone).replace("feature_dim=64", "feature_dim=8")
    path = _with_directive(tmp_path, "FrozenProbe", filled)
    fresh = analyse([path])[path.stem]
    cls = fresh.find_class("FrozenProbe")
    assert cls.build.how == "directive" and cls.draft is None and not cls.diagnostics()
    for level in ("fx", "aten"):
        assert cls.levels[level].ok and reported(cls, level) == expected(path, fresh, cls, level)


def test_a_directive_that_builds_but_gives_no_inputs_gets_a_draft_completing_it(tmp_path):
    path = _with_directive(tmp_path, "PointEncoder", "PointEncoder(feat_dim=4)")
    cls = analyse([path])[path.stem].find_class("PointEncoder")
    assert cls.build.how == "directive" and cls.draft is not None
    assert directive_text(cls.draft) == "PointEncoder(feat_dim=4)(FILL_batch)"
    assert [(v.name, v.source) for v in cls.draft.arguments] == [("feat_dim", "your directive")]


def test_fxlens_graph_prints_what_is_missing_and_the_directive_to_start_from():
    printed = fxlens("graph", str(FIXTURE), "--class", "PointEncoder", "--level", "aten").stdout
    assert "Guess failed: fill in batch (first used by Linear (7 features))" in printed
    assert "A directive to start from (each FILL_ is yours): # fxlens: PointEncoder()(FILL_batch)" in printed

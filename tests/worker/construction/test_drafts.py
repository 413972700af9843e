"""A class fxlens has no graph for gets a drafted directive (draft_report.Draft): applied as drafted, the
diagnostic names the value still to fill in and the fx level traces on; filled in, the class traces and
torch agrees with every node."""

from __future__ import annotations

from pathlib import Path

import pytest
from fxlens.render.draft import directive_text
from fxlens.render.lens import class_lenses
from fxlens.report import FileReport
from fxlens_command import fxlens
from torch_reference import analyse, analyse_each, expected, reported

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "drafts" / "detect_head.py"


def _with_directive(folder: Path, class_name: str, directive: str) -> Path:
    """The fixture with `# fxlens: <directive>` written above `class_name`, as the code action inserts it."""
    folder.mkdir()
    path = folder / FIXTURE.name
    text = FIXTURE.read_text().replace(f"class {class_name}(", f"# fxlens: {directive}\nclass {class_name}(", 1)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def report():
    return analyse([FIXTURE])[FIXTURE.stem]


@pytest.fixture(scope="module")
def edited(report, tmp_path_factory) -> dict[str, tuple[Path, FileReport]]:
    """The fixture with each directive a user writes from a draft (as drafted, filled in, wrong), by name: the
    file and its report. Each file is its own copy, traced in a trace child of its own; one worker traces them
    all (a worker's start, torch's import, is most of what a small file costs)."""
    point_encoder = directive_text(report.find_class("PointEncoder").draft)
    frozen_probe = directive_text(report.find_class("FrozenProbe").draft)
    backbone = "torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1))"
    directives = {
        "as drafted": ("PointEncoder", point_encoder),
        "filled in": (
            "PointEncoder",
            point_encoder.replace("FILL_batch", "PointBatch(torch.randn(2, 16, 3), torch.randn(2, 16, 4))"),
        ),
        "placeholder in the constructor": ("AnchorHead", "AnchorHead(anchors=FILL_anchors)(FILL_features)"),
        "rejected value": ("FrozenProbe", "FrozenProbe(backbone=PointEncoder, feature_dim=64)"),
        "constructor filled in": (
            "FrozenProbe",
            frozen_probe.replace("FILL_backbone", backbone).replace("feature_dim=64", "feature_dim=8"),
        ),
        "no inputs": ("PointEncoder", "PointEncoder(feat_dim=4)"),
    }
    root = tmp_path_factory.mktemp("drafts")
    paths = [_with_directive(root / f"edit{i}", *edit) for i, edit in enumerate(directives.values())]
    return dict(zip(directives, zip(paths, analyse_each(paths), strict=True), strict=True))


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


def test_applied_as_drafted_the_diagnostic_names_the_value_to_fill_in(edited):
    cls = edited["as drafted"][1].find_class("PointEncoder")
    assert cls.build.how == "directive" and cls.draft is None
    assert cls.levels["fx"].ok  # built from the directive's constructor: fx needs no inputs
    (note,) = [d for d in cls.levels["fx"].diagnostics if d.category == "placeholder"]
    assert note.line == cls.line - 1 and note.severity == "warning"
    assert "`batch` of `PointEncoder.forward`" in note.message and "FILL_batch" in note.message
    assert [d.category for d in cls.levels["fx"].diagnostics] == ["placeholder"]  # no guess on top of it


def test_a_placeholder_in_the_constructor_is_an_error_naming_it(edited):
    cls = edited["placeholder in the constructor"][1].find_class("AnchorHead")
    (error,) = cls.levels["fx"].diagnostics
    assert error.category == "placeholder" and error.severity == "error" and error.line == cls.line - 1
    assert "`anchors` of `AnchorHead.__init__`" in error.message
    assert [lens.title for lens in class_lenses(cls, ("fx", "aten"))][1].startswith("fx cannot build")


def test_filled_in_the_draft_traces_as_torch_does(edited):
    path, fresh = edited["filled in"]
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


def test_a_filled_in_value_the_constructor_rejects_is_named_by_the_diagnostic(edited):
    path, fresh = edited["rejected value"]
    cls = fresh.find_class("FrozenProbe")
    error, note = cls.levels["fx"].diagnostics
    line = path.read_text().split("\n").index("        self.backbone = backbone.eval()") + 1
    assert error.line == line and error.message.endswith(f"line {cls.line - 1}, its `backbone=PointEncoder`)")
    assert (
        error.fix
        == f"Change the directive's `backbone=PointEncoder`: line {line} of `FrozenProbe.__init__` rejects it."
    )
    assert note.line == cls.line - 1 and "from its `backbone=PointEncoder`" in note.message


def test_the_constructor_filled_in_builds_and_fxlens_finds_the_inputs_torch_agrees_with(edited):
    path, fresh = edited["constructor filled in"]
    cls = fresh.find_class("FrozenProbe")
    assert cls.build.how == "directive" and cls.draft is None and not cls.diagnostics()
    for level in ("fx", "aten"):
        assert cls.levels[level].ok and reported(cls, level) == expected(path, fresh, cls, level)


def test_a_directive_that_builds_but_gives_no_inputs_gets_a_draft_completing_it(edited):
    cls = edited["no inputs"][1].find_class("PointEncoder")
    assert cls.build.how == "directive" and cls.draft is not None
    assert directive_text(cls.draft) == "PointEncoder(feat_dim=4)(FILL_batch)"
    assert [(v.name, v.source) for v in cls.draft.arguments] == [("feat_dim", "your directive")]


def test_fxlens_graph_prints_what_is_missing_and_the_directive_to_start_from():
    printed = fxlens("graph", str(FIXTURE), "--class", "PointEncoder", "--level", "aten").stdout
    assert "Guess failed: fill in batch (first used by Linear (7 features))" in printed
    assert "A directive to start from (each FILL_ is yours): # fxlens: PointEncoder()(FILL_batch)" in printed

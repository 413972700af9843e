"""A class built from guessed arguments says so wherever it shows: lens, class-line hover, CLI header."""

from __future__ import annotations

import ast

from fxlens.lines import split
from fxlens.outline import header_line
from fxlens.render.graph_text import level_text
from fxlens.render.hover import hover_text
from fxlens.render.lens import class_lenses
from fxlens.report import Build, ClassReport, FileReport, InputSpec, LevelResult, Node

DIRECTIVE = "UNet(n_channels=3, n_classes=10)(torch.randn(2, 3, 16, 16))"


def _guessed() -> ClassReport:
    build = Build(
        "guessed",
        "inferred",
        [InputSpec("x", ["B", 3, 16, 16], "float32")],
        detail="n_channels=3, n_classes=10",
        directive=DIRECTIVE,
    )
    fx = LevelResult("fx", True, [Node("x", "placeholder", "x", 1), Node("output", "output", "output", 0)])
    return ClassReport("UNet", 12, 30, build=build, levels={"fx": fx})


def test_lens_hover_and_header_label_the_guess():
    cls = _guessed()
    # after the graph link and the short summary, so the row stays short
    assert [t.title for t in class_lenses(cls, ("fx",))] == ["Show graph", "fx 2", "built from guessed arguments"]
    hover = hover_text(FileReport("/m.py", classes=[cls]), 12, 0)
    assert "built: guessed" in hover and "guessed arguments n_channels=3, n_classes=10" in hover
    assert f"`# fxlens: {DIRECTIVE}`" in hover
    assert level_text("/m.py", cls, "fx").startswith(
        "== UNet (fx) — built: guessed, inputs inferred: x: (B, 3, 16, 16) f32 — guessed arguments n_channels=3"
    )


def test_a_directive_build_has_no_guess_label():
    cls = _guessed()
    cls.build.how = "directive"
    assert "built from guessed arguments" not in [t.title for t in class_lenses(cls, ("fx",))]
    assert "guessed" not in hover_text(FileReport("/m.py", classes=[cls]), 12, 0)


def test_the_pin_goes_above_the_decorators():
    text = "import torch\n\n@register(\n    'unet')\n@other\nclass UNet:\n    pass\n"
    assert header_line(split(text), 6, ast.parse(text)) == 3
    assert header_line(split(text.replace("    pass", "    pass((")), 6) == 5  # mid-edit: the `@` lines right above

"""The merge rule (render/causes.py): one diagnostic per span and cause, whatever the levels."""

from __future__ import annotations

from fxlens.render.causes import cause_of, merge, part_text, plain, related_text, words
from fxlens.report import Diagnostic

SPAN = (13, 11, 13, 23)
GUARD = (
    "GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  "
    "(Size-like symbols: none)"
)
WHY = "Python decides this branch from a tensor's value."
FIX = "Compute both sides and select with `torch.where(cond, a, b)`."


def _fx(cls: str = "Branchy") -> Diagnostic:
    return Diagnostic(
        *SPAN,
        "error",
        "data-dependent-control-flow",
        "TraceError: symbolically traced variables cannot be used as inputs to control flow",
        WHY,
        FIX,
        level="fx",
        class_name=cls,
    )


def _guard(level: str, cls: str = "Branchy") -> Diagnostic:
    return Diagnostic(*SPAN, "error", "data-dependent-control-flow", GUARD, WHY, FIX, level=level, class_name=cls)


def _break(cls: str = "Branchy") -> Diagnostic:
    return Diagnostic(
        *SPAN,
        "warning",
        "graph-break",
        "torch.compile graph break: Data-dependent branching [GB0170]",
        "Detected data-dependent branching.",
        "Use `torch.cond`.",
        level="dynamo",
        class_name=cls,
        gb_id="GB0170",
        hints=["Use `torch.cond` to express dynamic control flow."],
    )


def _all_levels() -> list[Diagnostic]:
    # in the order the worker's levels arrive (TRACE_ORDER), not the ladder's
    return [_fx(), _guard("aten"), _guard("core-aten"), _guard("backward"), _break()]


def test_a_data_dependent_branch_failing_at_every_level_is_one_cause():
    (cause,) = merge(_all_levels())
    d = cause.diagnostic
    assert d.message == (
        "fx, aten, core-aten and backward cannot trace this data-dependent branch; "
        "torch.compile breaks the graph here [GB0170]"
    )
    assert (d.line, d.col, d.end_line, d.end_col) == SPAN
    assert d.severity == "error"  # the worst of four errors and a warning
    assert d.category == "data-dependent-control-flow"
    assert (d.explanation, d.fix) == (WHY, FIX)
    assert d.gb_id == "GB0170" and d.hints == ["Use `torch.cond` to express dynamic control flow."]
    assert cause.levels == ("fx", "dynamo", "aten", "core-aten", "backward")  # the ladder's order
    assert cause.where() == "Branchy: fx, dynamo, aten, core-aten, backward"


def test_each_level_keeps_its_own_text_with_torch_s_guard_in_plain_words():
    (cause,) = merge(_all_levels())
    texts = [related_text(d) for d in cause.parts]
    assert texts[0] == "fx: TraceError: symbolically traced variables cannot be used as inputs to control flow"
    assert texts[1] == "dynamo: torch.compile graph break: Data-dependent branching [GB0170]"
    assert texts[2] == (
        "aten: the branch depends on a value computed from the input (torch: "
        "GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1) "
        "(unhinted: Eq(u0, 1)).  (Size-like symbols: none))"
    )
    assert [d.level for d in cause.parts] == ["fx", "dynamo", "aten", "core-aten", "backward"]


def test_the_two_default_levels_merge_without_a_break():
    (cause,) = merge([_fx(), _guard("aten")])
    assert cause.diagnostic.message == "fx and aten cannot trace this data-dependent branch"
    assert cause.diagnostic.gb_id is None


def test_levels_arriving_later_change_the_words_not_the_count():
    first = merge([_fx(), _guard("aten")])
    later = merge([_fx(), _guard("aten"), _guard("core-aten"), _break(), _guard("backward")])
    again = merge([*later[0].parts, _guard("core-aten"), _guard("backward")])  # copies of what is held
    assert len(first) == len(later) == len(again) == 1
    assert again[0].parts == later[0].parts


def test_a_guard_alone_is_translated_with_torch_s_text_beneath():
    (cause,) = merge([_guard("aten")])
    assert not cause.merged and cause.parts == (_guard("aten"),)
    assert cause.diagnostic.message == f"the branch depends on a value computed from the input\n{GUARD}"
    assert cause.where() == "Branchy, aten"


def test_other_diagnostics_pass_through_unchanged():
    hint = Diagnostic(6, 0, 6, 14, "hint", "guessed", "Guessed Net(width=8)", level=None, class_name="Net")
    (cause,) = merge([hint])
    assert cause.diagnostic is hint and cause.where() == ""
    assert plain(hint) is None and part_text(hint) == "Guessed Net(width=8)"


def test_other_spans_and_other_causes_stay_apart():
    elsewhere = Diagnostic(
        20,
        4,
        20,
        9,
        "error",
        "builtin-on-proxy",
        "RuntimeError: 'len' is not supported",
        level="fx",
        class_name="Branchy",
    )
    item = Diagnostic(
        *SPAN,
        "warning",
        "graph-break",
        "torch.compile graph break: Unsupported Tensor.item() call",
        level="dynamo",
        class_name="Branchy",
        gb_id="GB0124",
    )
    unknown = Diagnostic(
        *SPAN,
        "warning",
        "graph-break",
        "torch.compile graph break: something new",
        level="dynamo",
        class_name="Branchy",
        gb_id=None,
    )
    causes = merge([_fx(), elsewhere, _guard("aten"), item, unknown])
    assert [len(c.parts) for c in causes] == [2, 1, 1, 1]
    assert cause_of(item) == "item/numpy" and cause_of(unknown) == "graph-break"


def test_a_child_traced_alone_and_inside_its_parent_is_one_cause_naming_both():
    (cause,) = merge([_fx("Block"), _guard("aten", "Block"), _fx("Net"), _guard("aten", "Net")])
    assert cause.diagnostic.message == "fx and aten cannot trace this data-dependent branch (in Block and Net)"
    assert cause.classes == ("Block", "Net")
    assert (
        related_text(cause.parts[0], classes=2)
        == "Block · fx: TraceError: symbolically traced variables cannot be used as inputs to control flow"
    )


def test_a_shared_failure_without_words_of_its_own_quotes_the_message():
    shared = [
        Diagnostic(
            7,
            4,
            9,
            20,
            "error",
            "construction",
            "TypeError: __init__() missing 1 required argument",
            level=level,
            class_name="Gate",
        )
        for level in ("fx", "aten")
    ]
    (cause,) = merge(shared)
    assert cause.diagnostic.message == "fx and aten fail here: TypeError: __init__() missing 1 required argument"
    assert cause.diagnostic.category == "construction"


def test_only_graph_breaks_of_two_classes_keep_torch_s_words():
    (cause,) = merge([_break("Block"), _break("Net")])
    assert cause.diagnostic.message == "torch.compile graph break: Data-dependent branching [GB0170] (in Block and Net)"
    assert cause.diagnostic.severity == "warning" and cause.diagnostic.category == "graph-break"


def test_words():
    assert [words([]), words(["fx"]), words(["fx", "aten"]), words(["fx", "aten", "backward"])] == [
        "",
        "fx",
        "fx and aten",
        "fx, aten and backward",
    ]


def test_the_lsp_diagnostic_carries_each_level_in_related_information_or_in_its_message():
    from fxlens.lsp.diagnostics import lsp_diagnostic
    from fxlens.lsp.positions import Coords

    text = "\n".join(["x = 1"] * 12 + ["        if y.mean() > 0:", ""])
    (cause,) = merge(_all_levels())
    d = lsp_diagnostic(cause, Coords(text), "file:///m.py")
    assert d.message == cause.diagnostic.message + f"\nfix: {FIX}"
    assert [info.message.split(": ")[0] for info in d.related_information] == [
        "fx",
        "dynamo",
        "aten",
        "core-aten",
        "backward",
    ]
    assert {info.location.uri for info in d.related_information} == {"file:///m.py"}
    assert all(info.location.range == d.range for info in d.related_information)
    assert (d.range.start.line, d.range.start.character, d.code) == (12, 11, "data-dependent-control-flow")
    assert d.source == "fxlens (Branchy · fx, dynamo, aten, core-aten, backward)"
    bare = lsp_diagnostic(cause, Coords(text), "file:///m.py", related=False)  # a client without relatedInformation
    assert bare.related_information is None
    assert bare.message.split("\n")[1:6] == [related_text(p) for p in cause.parts]
    (alone,) = merge([_fx()])
    single = lsp_diagnostic(alone, Coords(text), "file:///m.py")
    assert single.related_information is None and single.source == "fxlens (Branchy · fx)"

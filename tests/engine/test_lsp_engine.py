"""Engine pieces without a worker: shifting old results through edits, incremental plans, the view."""

import json
from pathlib import Path

from fxlens.engine.documents import Document, Traced
from fxlens.engine.incremental import known_fingerprints, merge, needs_trace
from fxlens.engine.parsing import cheap_outline
from fxlens.engine.shift import LineMap, shift_class
from fxlens.engine.worker_client import TraceOptions
from fxlens.report import Diagnostic, FileReport, file_from_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"
TEXT = (FIXTURES / "residual_mlp.py").read_text()


def report():
    return file_from_json(json.loads((FIXTURES / "residual_mlp.report.json").read_text()))


def test_line_map_moves_unchanged_lines_and_drops_edited_ones():
    new = TEXT.replace("        y = self.fc(x) + self.shift\n", "        # note\n        y = self.fc(x) - self.shift\n")
    lines = LineMap(TEXT, new)
    assert lines.line(12) == 12 and lines.line(13) is None and lines.line(14) == 15
    assert lines.span(14, 14) == (15, 15) and lines.span(12, 13) is None


def test_shifted_class_withholds_nodes_on_edited_lines():
    new = "# a new first line\n" + TEXT.replace("        return torch.relu(y) + x", "        return torch.relu(y) * x")
    residual = shift_class(report().find_class("Residual"), LineMap(TEXT, new))
    assert residual.line == 7
    lines = {n.name: n.line for n in residual.levels["fx"].nodes}
    assert lines["fc"] == 14 and lines["relu"] is None and lines["add_1"] is None
    assert len(residual.levels["fx"].nodes) == 7  # counts stay: the lens is still right


def test_class_whose_header_changed_is_withheld():
    new = TEXT.replace("class Residual(nn.Module):", "class Residual(nn.Module):  # edited")
    assert shift_class(report().find_class("Residual"), LineMap(TEXT, new)) is None


def test_document_view_keeps_last_good_classes_through_a_syntax_error():
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    doc.finish(Traced(1, TEXT, report()))
    broken = TEXT.replace("return self.head(h).sum()", "return self.head(h).sum(")
    doc.edit(2, broken)
    syntax = FileReport(
        "/r.py", diagnostics=[Diagnostic(29, 33, 29, 34, "error", "syntax", "SyntaxError: '(' was never closed")]
    )
    doc.finish(Traced(2, broken, syntax))
    view = doc.view()
    assert view.stale and [c.name for c in view.report.classes] == ["Residual", "ResidualMLP"]
    assert [d.category for d in view.report.diagnostics] == ["syntax"]
    mlp = view.report.find_class("ResidualMLP")
    assert next(n for n in mlp.levels["fx"].nodes if n.name == "sum_1").line is None  # its line is the broken one


def test_partial_classes_replace_old_ones_while_a_trace_streams_in():
    doc = Document("file:///r.py", "/r.py", 1, TEXT)
    doc.finish(Traced(1, TEXT, report()))
    fresh = report().find_class("Residual")
    fresh.levels["fx"].nodes = fresh.levels["fx"].nodes[:3]
    doc.add_partial(TEXT, fresh)
    assert len(doc.view().report.find_class("Residual").levels["fx"].nodes) == 3
    assert doc.class_at(13) == "Residual" and doc.class_at(27) == "ResidualMLP" and doc.class_at(2) is None


TWO = (FIXTURES / "two_models.py").read_text()


def two_report():
    from fxlens.report import ClassReport

    return FileReport("/t.py", classes=[ClassReport("Encoder", 6, 12), ClassReport("Head", 16, 23)])


def test_a_trace_is_needed_unless_only_positions_changed():
    options = TraceOptions()
    good = Traced(1, TWO, two_report(), options)
    assert not needs_trace(good, TWO, options)
    assert not needs_trace(good, TWO.replace("\n\n\nclass Head", "\n\n\n\n\nclass Head"), options)  # lines moved
    assert needs_trace(good, TWO.replace("y.sigmoid()", "y.tanh()"), options)
    assert needs_trace(good, TWO.replace("import torch\n", "import torch\nimport math\n"), options)
    assert needs_trace(good, TWO, TraceOptions(levels=("fx",)))
    assert needs_trace(good, TWO + "\nclass Extra:\n    pass\n", options)
    assert needs_trace(None, TWO, options)
    assert needs_trace(good, TWO.replace("y.sigmoid()", "y.sigmoid("), options)


def test_fingerprints_are_offered_only_for_traces_made_with_the_same_options():
    from fxlens.report import ClassReport

    report = FileReport("/t.py", classes=[ClassReport("Encoder", 6, 12, fingerprint="e1"), ClassReport("Head", 16, 23)])
    good = Traced(1, TWO, report, TraceOptions())
    assert known_fingerprints(good, TraceOptions()) == {"Encoder": "e1"}
    assert known_fingerprints(good, TraceOptions(levels=("fx",))) == {}
    assert known_fingerprints(None, TraceOptions()) == {}


def test_merge_keeps_untouched_classes_shifted():
    options = TraceOptions()
    good = Traced(1, TWO, two_report(), options)
    new = TWO.replace("        y = self.out(x)\n", "        y = self.out(x)\n        y = y + 1\n")
    from fxlens.report import ClassReport

    fresh = Traced(2, new, FileReport("/t.py", classes=[ClassReport("Head", 16, 24)], unchanged=["Encoder"]), options)
    merged = merge(good, fresh)
    assert [(c.name, c.line) for c in merged.report.classes] == [("Encoder", 6), ("Head", 16)]
    # a class the worker traced and dropped (renamed, no longer a Module) is not brought back
    alone = Traced(2, new, FileReport("/t.py", classes=[ClassReport("Head", 16, 24)]), options)
    assert [c.name for c in merge(good, alone).report.classes] == ["Head"]


def test_each_text_is_outlined_once_across_the_edits_that_compare_it(monkeypatch):
    from fxlens.engine import documents

    parsed: list[str] = []

    def counting(text):
        parsed.append(text)
        return cheap_outline(text)

    monkeypatch.setattr(documents, "cheap_outline", counting)
    options = TraceOptions()
    doc = documents.Document("file:///t.py", "/t.py", 1, TWO)
    edited = TWO.replace("y.sigmoid()", "y.tanh()")
    # edit 1 compares the held trace's text with TWO, edit 2 compares TWO (now held) with the edited text
    assert not needs_trace(Traced(1, TWO, two_report(), options), TWO, options, doc.outline_of)
    assert needs_trace(Traced(2, TWO, two_report(), options), edited, options, doc.outline_of)
    assert needs_trace(Traced(3, edited, two_report(), options), TWO, options, doc.outline_of)
    assert parsed == [TWO, edited]
    assert doc.outline_of(edited) == cheap_outline(edited)

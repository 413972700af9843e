"""Engine pieces without a worker: shifting old results through edits, incremental plans, the view."""
import json
from pathlib import Path

from fxlens.engine.documents import Document, Traced
from fxlens.engine.incremental import merge, plan
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
    syntax = FileReport("/r.py", diagnostics=[Diagnostic(29, 33, 29, 34, "error", "syntax", "SyntaxError: '(' was never closed")])
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


def test_plan_traces_only_the_edited_independent_class():
    options = TraceOptions()
    good = Traced(1, TWO, two_report(), options)
    assert plan(good, TWO.replace("y.sigmoid()", "y.tanh()"), options) == ["Head"]
    assert plan(good, TWO, options) == []
    assert plan(good, TWO.replace("import torch\n", "import torch\nimport math\n"), options) is None  # module level
    assert plan(good, TWO.replace("y.sigmoid()", "y.tanh()"), TraceOptions(levels=("fx",))) is None
    assert plan(good, TWO + "\nclass Extra:\n    pass\n", options) is None
    assert plan(None, TWO, options) is None
    assert plan(good, TWO.replace("y.sigmoid()", "y.sigmoid("), options) is None


def test_plan_follows_references_and_parents():
    options = TraceOptions()
    good = Traced(1, TEXT, report(), options)
    # Residual changed: ResidualMLP names it, so everything is traced
    assert plan(good, TEXT.replace("torch.relu(y)", "torch.sigmoid(y)"), options) is None
    # ResidualMLP changed: Residual is built by it, so it goes too
    assert plan(good, TEXT.replace("self.head(h).sum()", "self.head(h).mean()"), options) is None


def test_plan_traces_everything_when_a_class_that_is_not_traced_changes():
    config = "from dataclasses import dataclass\n\n\n@dataclass\nclass Config:\n    width: int = 16\n\n\n"
    options = TraceOptions()
    good = Traced(1, config + TWO, two_report(), options)
    # Encoder and Head may be built from Config's defaults without naming it: they must be traced again
    assert plan(good, (config + TWO).replace("width: int = 16", "width: int = 32"), options) is None


def test_merge_keeps_untouched_classes_shifted():
    options = TraceOptions()
    good = Traced(1, TWO, two_report(), options)
    new = TWO.replace("        y = self.out(x)\n", "        y = self.out(x)\n        y = y + 1\n")
    from fxlens.report import ClassReport
    fresh = Traced(2, new, FileReport("/t.py", classes=[ClassReport("Head", 16, 24)]), options)
    merged = merge(good, fresh, ["Head"])
    assert [(c.name, c.line) for c in merged.report.classes] == [("Encoder", 6), ("Head", 16)]

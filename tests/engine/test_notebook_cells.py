"""A notebook's virtual module: IPython lines made inert line for line, cells mapped both ways, results
carried across edits by cell."""

from __future__ import annotations

from fxlens.engine.magics import neutralise
from fxlens.engine.notebook import CellLineMap, virtual_module
from fxlens.engine.shift import LineMap
from fxlens.lsp.cells import CellCoords
from lsprotocol import types


def test_magics_become_pass_at_their_indentation():
    cell = "%matplotlib inline\n!pip install einops\nfiles = !ls\nmodel?\nfor i in range(2):\n    %time f()\nx = 1"
    assert neutralise(cell) == "pass\npass\npass\npass\nfor i in range(2):\n    pass\nx = 1"


def test_python_that_looks_like_a_magic_is_kept():
    for code in [
        "x = (a\n     % b)",
        's = """\n%d items\n!\n"""',
        "y = a \\\n  % b",
        "x = 5 % 3",
        "a == !b",
        "y = 1  # why?",
        "z = {\n    'k': 1,\n}\n",
    ]:
        assert neutralise(code) == code, code


def test_cell_magics_keep_a_python_body_only():
    assert neutralise("%%bash\necho hi\nls") == "\n\n"
    assert neutralise("%%time\nx = 1") == "pass\nx = 1"


def test_code_cells_follow_each_other_line_for_line():
    module = virtual_module([("c1", "import torch\n%matplotlib inline"), ("c2", "x = 1\n"), ("c3", "y = 2")])
    assert module.text == "import torch\npass\nx = 1\n\ny = 2"
    assert [(c.uri, c.start, c.end) for c in module.cells] == [("c1", 1, 2), ("c2", 3, 4), ("c3", 5, 5)]
    assert module.cell_at(4).uri == "c2" and module.cell_at(6) is None
    assert module.nearest_cell(0).uri == "c1" and module.nearest_cell(9).uri == "c3"


def test_cell_positions_both_ways_in_the_cell_s_own_columns():
    module = virtual_module([("c1", "import torch"), ("c2", "s = 'é'; x = torch.ones(1)\ny = x")])
    coords = CellCoords(module.cell("c2"), "utf-16")
    # module line 2, byte column of `x` after the two-byte é -> the cell's line 0, UTF-16 column
    byte_col = "s = 'é'; x".encode().index(b"x")
    assert coords.lsp_position(2, byte_col) == types.Position(line=0, character=9)
    assert coords.report_position(types.Position(line=1, character=4)) == (3, 4)
    assert coords.contains(2) and not coords.contains(1)
    # a span past the cell ends at the cell's end, never in the next cell
    assert coords.lsp_range(3, 0, 7, 0).end == types.Position(line=1, character=5)


def test_a_moved_cell_keeps_its_results_at_its_new_lines():
    a, b, c = ("a", "import torch"), ("b", "class A:\n    x = 1\n    y = 2"), ("c", "class B:\n    x = 1\n    y = 2")
    old, new = virtual_module([a, b, c]), virtual_module([a, c, b])
    cells = CellLineMap(old, new)
    assert [cells.line(n) for n in range(1, 8)] == [1, 5, 6, 7, 2, 3, 4]
    # a plain diff of the texts cannot follow both classes to their new lines
    plain = LineMap(old.text, new.text)
    assert [plain.line(n) for n in (2, 5)] != [5, 2]


def test_an_edit_inside_a_cell_maps_like_a_file():
    old = virtual_module([("a", "x = 1\ny = 2"), ("b", "z = 3")])
    new = virtual_module([("a", "x = 1\nw = 0\ny = 2"), ("b", "z = 3")])
    cells = CellLineMap(old, new)
    assert [cells.line(n) for n in (1, 2, 3)] == [1, 3, 4]


def test_lines_quoted_in_messages_are_the_cells():
    from fxlens.report import Diagnostic

    module = virtual_module([("c1", "import torch\nWIDTH = 4"), ("c2", "# fxlens: Net()(x)\nclass Net:\n    pass")])
    coords = CellCoords(module.cell("c2"), "utf-16", module)
    found = Diagnostic(
        4,
        0,
        4,
        5,
        "error",
        "construction",
        "NameError: x (raised at line 3)",
        "The `# fxlens:` directive (line 3) raised; WIDTH is set at line 2.",
        "see line 40",
    )
    local = coords.local_diagnostic(found)
    assert local.message == "NameError: x (raised at line 1)"
    assert local.explanation == "The `# fxlens:` directive (line 1) raised; WIDTH is set at line 2 of code cell 1."
    assert local.fix == "see line 40"  # no such line in the notebook: left as it was
    assert (local.line, local.col) == (4, 0)  # the span stays in module lines: lsp_range converts it

"""positions.py: report coordinates (1-based lines, UTF-8 byte columns) <-> LSP positions."""

from fxlens.lsp.positions import Coords, byte_col_to_units, units_to_byte_col
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

LINE = '    y = "é😀" + self.fc(x)'  # é: 2 bytes / 1 unit; 😀: 4 bytes / 2 UTF-16 units / 1 UTF-32 unit


def test_ascii_columns_are_the_same_in_every_encoding():
    coords = Coords("x = 1\n    y = self.fc(x)\n")
    for encoding in ("utf-8", "utf-16", "utf-32"):
        coords = Coords("x = 1\n    y = self.fc(x)\n", encoding)
        assert coords.lsp_position(2, 8) == types.Position(line=1, character=8)
        assert coords.report_position(types.Position(line=1, character=8)) == (2, 8)


def test_non_ascii_before_the_column():
    byte_col = len(LINE[: LINE.index("self")].encode())
    assert byte_col_to_units(LINE, byte_col, "utf-8") == byte_col
    assert byte_col_to_units(LINE, byte_col, "utf-16") == LINE.index("self") + 1  # the emoji is 2 units
    assert byte_col_to_units(LINE, byte_col, "utf-32") == LINE.index("self")
    for encoding in ("utf-8", "utf-16", "utf-32"):
        assert units_to_byte_col(LINE, byte_col_to_units(LINE, byte_col, encoding), encoding) == byte_col


def test_range_and_line_end_and_clamping():
    coords = Coords("a\n" + LINE + "\n", "utf-16")
    rng = coords.lsp_range(2, 0, 2, len(LINE.encode()))
    assert rng.start == types.Position(1, 0) and rng.end.character == len(LINE) + 1
    assert coords.line_end(2).character == len(LINE) + 1
    assert coords.lsp_position(99, 3).line == 2  # past the end: the last line
    assert coords.report_position(types.Position(line=1, character=500)) == (2, len(LINE.encode()))


def test_unknown_encoding_means_utf16():
    assert Coords(LINE, "latin-1").encoding == "utf-16"
    assert Coords(LINE, None).encoding == "utf-16"


@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=30),
    st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_every_character_boundary_round_trips(text, encoding):
    for index in range(len(text) + 1):
        byte_col = len(text[:index].encode())
        assert units_to_byte_col(text, byte_col_to_units(text, byte_col, encoding), encoding) == byte_col

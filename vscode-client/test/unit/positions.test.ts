import assert from "node:assert/strict";
import { test } from "node:test";
import { editorRange, reportLine, utf16Column } from "../../src/core/positions";

test("ASCII byte columns are UTF-16 columns", () => {
  assert.equal(utf16Column("    h = self.stem(x)", 8), 8);
});

test("multi-byte characters before the column shift it", () => {
  // "é" is 2 UTF-8 bytes and 1 UTF-16 unit; "😀" is 4 bytes and 2 units
  assert.equal(utf16Column("é = f(x)", 3), 2);
  assert.equal(utf16Column("s = '😀' + g(x)", 12), 10);
});

test("a column past the end of the line stops at the end", () => {
  assert.equal(utf16Column("abc", 10), 3);
});

test("report spans become 0-based editor ranges", () => {
  const lines = ["class A:", "    def forward(self, x):", "        return self.fc(x) + 1"];
  const range = editorRange({ line: 3, col: 15, end_line: 3, end_col: 25 }, (l) => lines[l]);
  assert.deepEqual(range, { start: { line: 2, character: 15 }, end: { line: 2, character: 25 } });
});

test("a span without an end column runs to the end of its line", () => {
  const lines = ["x = 1", "y = torch.relu(x)"];
  const range = editorRange({ line: 2, col: null, end_line: null, end_col: null }, (l) => lines[l]);
  assert.deepEqual(range, { start: { line: 1, character: 0 }, end: { line: 1, character: 17 } });
});

test("editor lines map to 1-based report lines", () => {
  assert.equal(reportLine(0), 1);
});

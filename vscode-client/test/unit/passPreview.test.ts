import assert from "node:assert/strict";
import { test } from "node:test";
import { passGraphReport, PassPreview, passProblem, passTarget, runPassArguments } from "../../src/core/passPreview";

test("the code action's runPass arguments name what the view runs", () => {
  assert.deepEqual(passTarget(["file:///m.py", "TinyNet", "fuse-linear-relu", "file:///m.py", true]),
    { uri: "file:///m.py", className: "TinyNet", passName: "fuse-linear-relu", passUri: "file:///m.py" });
  assert.deepEqual(passTarget(["file:///m.py", "TinyNet", "mine"]), { uri: "file:///m.py", className: "TinyNet", passName: "mine", passUri: undefined });
  assert.equal(passTarget(["file:///m.py", "TinyNet"]), undefined, "no pass: left to the server, which says what is missing");
  assert.equal(passTarget([]), undefined);
});

test("the view asks the server for the preview without the read-only markdown document", () => {
  const args = runPassArguments({ uri: "file:///m.py", className: "TinyNet", passName: "mine", passUri: undefined });
  assert.deepEqual(args, ["file:///m.py", "TinyNet", "mine", "file:///m.py", false]);
  assert.deepEqual(runPassArguments({ uri: "file:///m.py", className: "A", passName: "p", passUri: "file:///passes.py" }).slice(3), ["file:///passes.py", false]);
});

const preview: PassPreview = {
  uri: "file:///m.py", ok: true, class: "TinyNet", pass: "dead-code", verdict: "equal", markdown: "## …", message: "",
  graph: { nodes: [{ id: "x", op: "placeholder", target: "x", shape: "", dtype: null, label: "x", scope: "", line: null, col: null, end_line: null, end_col: null }], edges: [] },
  report: { pass_name: "dead-code", class_name: "TinyNet", ok: true, counts_before: { placeholder: 1 }, counts_after: { placeholder: 1 },
    changes: [], diff: "", code_after: "def forward(self, x):\n    return x\n", proof: { verdict: "equal" }, diagnostics: [] },
};

test("a preview is drawn as the fx graph after the pass, its code the code after", () => {
  assert.equal(passProblem(preview), undefined);
  const report = passGraphReport(preview);
  assert.equal(report.level, "fx");
  assert.equal(report.class, "TinyNet");
  assert.equal(report.code, preview.report!.code_after);
  assert.equal(report.graph, preview.graph);
});

test("a failed run's message is what the view shows", () => {
  assert.equal(passProblem({ ...preview, report: null, class: null, message: "no pass 'x': mark a function `# fxlens: pass`" }),
    "no pass 'x': mark a function `# fxlens: pass`");
  assert.equal(passProblem(null), "the server returned no pass preview");
  const failed = passGraphReport({ ...preview, report: { ...preview.report!, ok: false } });
  assert.match(failed.message ?? "", /dead-code failed on TinyNet/);
});

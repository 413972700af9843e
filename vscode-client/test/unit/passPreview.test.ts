import assert from "node:assert/strict";
import { test } from "node:test";
import {
  changeWords, classPicks, parsePassChoices, passGraphReport, passPicks, PassPreview, passProblem, passTarget, runPassArguments,
} from "../../src/core/passPreview";

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
  assert.match(failed.message ?? "", /dead-code failed on TinyNet: see the problems listed under the toolbar/);
});

const choices = parsePassChoices({
  classes: [{ name: "Encoder", runnable: true, why: "" }, { name: "Needs", runnable: false, why: "fxlens cannot build Needs: …" },
    { name: "Head", runnable: true, why: "" }, { runnable: true }],
  passes: [{ name: "fuse-linear-relu", kind: "builtin", what: "fuse each Linear and ReLU", passUri: "file:///m.py", file: "" },
    { name: "fold_bn", kind: "user", what: "", passUri: "file:///passes.py", file: "passes.py" }, { name: "no-uri" }],
});

test("the palette's server answer keeps only well-formed classes and passes", () => {
  assert.deepEqual(choices.classes.map((c) => c.name), ["Encoder", "Needs", "Head"]);
  assert.deepEqual(choices.passes.map((p) => p.name), ["fuse-linear-relu", "fold_bn"]);
  assert.deepEqual(parsePassChoices(null), { classes: [], passes: [] });
});

test("the class pick puts the class at the cursor first and the unbuildable ones last, saying why", () => {
  const { items, problem } = classPicks(choices, "Head");
  assert.equal(problem, undefined);
  assert.deepEqual(items.map((i) => [i.label, i.description]), [["Head", "at the cursor"], ["Encoder", undefined], ["Needs", "cannot be built"]]);
  assert.equal(items[2].value.why, "fxlens cannot build Needs: …");
  assert.match(classPicks({ classes: [], passes: [] }, undefined).problem ?? "", /no Module class has been traced/);
  const none = classPicks({ classes: [choices.classes[1]], passes: [] }, undefined);
  assert.deepEqual(none.items, []);
  assert.match(none.problem ?? "", /no class of this file can be built to run a pass on: fxlens cannot build Needs/);
});

test("the pass pick says where each pass comes from", () => {
  assert.deepEqual(passPicks(choices).map((p) => [p.label, p.description, p.detail, p.value.passUri]),
    [["fuse-linear-relu", "built-in", "fuse each Linear and ReLU", "file:///m.py"], ["fold_bn", "passes.py", undefined, "file:///passes.py"]]);
});

test("a change reads as the markdown preview says it: a node that stays is not replaced", () => {
  assert.equal(changeWords({ change: "added", name: "mul", op: "call_function", target: "torch.mul", replaces: [], took_users_of: ["conv"] }),
    "call_function[torch.mul], taking over the users of conv");
  assert.equal(changeWords({ change: "added", name: "f", op: "call_module", target: "f", replaces: ["fc1", "relu"] }),
    "call_module[f], in place of fc1, relu");
  assert.equal(changeWords({ change: "changed", name: "conv", op: "call_module", target: "conv (Conv2d)", detail: "module replaced: weight, bias changed", line: 18 }),
    "call_module[conv (Conv2d)] (line 18) — module replaced: weight, bias changed");
  assert.equal(changeWords({ change: "retargeted", name: "relu", op: "call_function", target: "torch.clamp", before: "call_function[torch.relu]" }),
    "call_function[torch.relu] → call_function[torch.clamp]");
});

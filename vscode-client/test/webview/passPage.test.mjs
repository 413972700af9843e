// The graph page showing a pass preview, fed real fxlens.runPass payloads of the lesson's TinyNet
// (fc1 → relu → fc2) and of a conv → batch norm block: the graph after the pass with its changes marked,
// the verdict and diff beside, the proof's table whole in a half-width panel.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { artifact, CLIENT_DIR } from "../browser.mjs";
import { openPage, waitForDraw } from "./page.mjs";

const PYTHON = process.env.FXLENS_TEST_PYTHON ?? "python3";
let payloads, view;

before(async () => {
  const out = join(mkdtempSync(join(tmpdir(), "fxlens-pass-")), "passes.json");
  execFileSync(PYTHON, [join(CLIENT_DIR, "test/fixtures/make_pass_payload.py"), join(CLIENT_DIR, "../tests/fixtures/passes/tinynet.py"),
    "TinyNet", out, "fuse-linear-relu", "relu_to_sigmoid"], { stdio: ["ignore", "ignore", "inherit"] });
  payloads = JSON.parse(readFileSync(out, "utf8"));
  const convOut = out.replace(/\.json$/, "-conv.json");
  execFileSync(PYTHON, [join(CLIENT_DIR, "test/fixtures/make_pass_payload.py"), join(CLIENT_DIR, "../tests/fixtures/passes/conv_bn.py"),
    "ConvBlock", convOut, "fold_batchnorm", "scale_conv_output"], { stdio: ["ignore", "ignore", "inherit"] });
  Object.assign(payloads, JSON.parse(readFileSync(convOut, "utf8")));
  view = await openPage({ width: 1300, height: 800 });
});

after(async () => {
  await view?.close();
});

/** Posts a pass preview as the extension does (graphPanel.ts: the after-graph as a report, the payload beside). */
async function showPass(preview) {
  const { page } = view;
  const draws = await page.evaluate(() => Number(document.body.dataset.draws ?? 0));
  const report = { uri: preview.uri, class: preview.class, level: "fx", levels: ["fx"], ok: preview.report.ok, printout: preview.report.diff,
    code: preview.report.code_after, table: "", diagnostics: preview.report.diagnostics, graph: preview.graph, message: preview.message };
  await view.send({ type: "report", report, pass: preview });
  await waitForDraw(page, draws);
}

test("the fusion's preview draws the fused node as added, fc1 and relu as removed, and says equal", async () => {
  const { page } = view;
  await showPass(payloads["fuse-linear-relu"]);
  assert.equal(await page.locator('g.node.change-added[data-id="fc1_relu"]').count(), 1);
  assert.deepEqual((await page.locator("g.node.change-removed").evaluateAll((nodes) => nodes.map((n) => n.dataset.id))).sort(), ["fc1", "relu"]);
  // the groups are the after-graph's: the fused node and the two it replaces make no module box
  assert.equal(await page.locator("g.group").count(), 0);
  // the nodes the pass kept are drawn unmarked
  assert.equal(await page.locator('g.node[data-id="fc2"]:not([class*="change-"])').count(), 1);
  // beside the pane, the drawing stays in the window (the diff's long lines scroll inside the pane)
  const drawn = await page.locator('g.node[data-id="fc1_relu"]').boundingBox();
  assert.ok(drawn.x > 0 && drawn.x + drawn.width <= 1300, `the fused node is in the window: ${JSON.stringify(drawn)}`);
  const pane = page.locator("#pass");
  assert.equal(await pane.isVisible(), true);
  assert.match(await pane.locator("h3").textContent(), /fuse-linear-relu on TinyNet/);
  assert.match(await pane.locator(".headline").textContent(), /5 → 4 nodes/);
  assert.match(await pane.locator(".verdict-equal strong").textContent(), /equal/);
  assert.match(await pane.locator("li.change-added").textContent(), /fc1_relu.*in place of fc1, relu/);
  assert.ok((await pane.locator("pre.diff .diff-del").count()) >= 2, "the printout diff shows the removed lines");
  assert.match(await pane.locator("pre.diff .diff-add").allTextContents().then((t) => t.join("")), /%fc1_relu/);
  assert.deepEqual(await view.violations(), []);
  assert.deepEqual(view.errors, []);
  await page.screenshot({ path: artifact("webview-pass.png") });
});

test("a changed node in the pane selects it in the graph", async () => {
  const { page } = view;
  await page.locator("#pass li.change-added a").click();
  await page.locator('g.node.selected[data-id="fc1_relu"]').waitFor();
  assert.match(await page.locator("#details").textContent(), /change\s*added/);
});

test("a pass that changes results is marked so, with the retargeted node", async () => {
  const { page } = view;
  await showPass(payloads["relu_to_sigmoid"]);
  assert.equal(await page.locator('g.node.change-retargeted[data-id="relu"]').count(), 1);
  assert.equal(await page.locator("g.node.change-added, g.node.change-removed").count(), 0);
  assert.match(await page.locator("#pass .verdict-changes-results").textContent(), /changes results/);
  assert.match(await page.locator("#pass").textContent(), /max \|diff\|/);
});

test("a folded batch norm marks the conv it changed; a node inserted after the conv takes over its users, not its place", async () => {
  const { page } = view;
  await showPass(payloads["fold_batchnorm"]);
  assert.equal(await page.locator('g.node.change-changed[data-id="conv"]').count(), 1);
  assert.equal(await page.locator('g.node.change-removed[data-id="bn"]').count(), 1);
  assert.match(await page.locator("#pass li.change-changed").textContent(), /changed conv: call_module\[conv \(Conv2d\)\] \(line 18\) — module replaced: weight, bias changed/);
  await showPass(payloads["scale_conv_output"]);
  const added = await page.locator("#pass li.change-added").textContent();
  assert.match(added, /added mul: call_function\[torch\.mul\] \(line 18\), taking over the users of conv/);
  assert.doesNotMatch(added, /in place of/);
  assert.equal(await page.locator('g.node[data-id="conv"]:not([class*="change-"])').count(), 1, "the conv stays, unmarked");
});

test("in a half-width panel the proof table keeps its five columns, the last one inside the pane", async () => {
  const { page } = view;
  await page.setViewportSize({ width: 700, height: 800 });
  await showPass(payloads["fold_batchnorm"]);
  const pane = page.locator("#pass");
  const heads = await pane.locator("table.outputs th").allTextContents();
  assert.deepEqual(heads, ["output", "equal", "max |diff|", "SQNR dB", "largest at"]);
  const box = await pane.boundingBox();
  const cells = await pane.locator("table.outputs th, table.outputs td").evaluateAll((all) => all.map((c) => {
    const r = c.getBoundingClientRect();
    return { text: c.textContent, right: r.right };
  }));
  for (const cell of cells) {
    assert.ok(cell.right <= box.x + box.width, `"${cell.text}" ends at ${cell.right}, past the pane's ${box.x + box.width}`);
  }
  assert.match(await pane.locator("table.outputs td").nth(3).textContent(), /^\d+(\.\d+)?$/, "the SQNR of a close result is a number");
  assert.ok(await pane.evaluate((p) => p.scrollWidth <= p.clientWidth), "the pane does not scroll sideways");
  await page.screenshot({ path: artifact("webview-pass-half-width.png") });
  await page.setViewportSize({ width: 1300, height: 800 });
});

test("Back to the graph asks for the class's own graph; a plain report hides the pane", async () => {
  const { page } = view;
  await page.locator("#pass button", { hasText: "Back to the graph" }).click();
  assert.ok((await view.posted()).some((m) => m.type === "closePass"));
  const preview = payloads["fuse-linear-relu"];
  await view.show({ uri: preview.uri, class: "TinyNet", level: "fx", levels: ["fx"], ok: true, printout: "", code: "", table: "", diagnostics: [],
    graph: { nodes: preview.report.nodes_before.map((n) => ({ ...n, id: n.name, label: n.name, shape: "", dtype: null, scope: "" })), edges: [] } });
  assert.equal(await page.locator("#pass").isVisible(), false);
  assert.equal(await page.locator('g.node[class*="change-"]').count(), 0);
});

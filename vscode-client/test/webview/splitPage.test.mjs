// The split view: two levels of one class side by side (fx | aten), linked through the source — a
// node chosen at either level marks the nodes of its span at the other, the cursor line marks both.
// Fed real engine reports of examples/residual_mlp.py.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { artifact, CLIENT_DIR } from "../browser.mjs";
import { openPage, toolbarControl } from "./page.mjs";

const PYTHON = process.env.FXLENS_TEST_PYTHON ?? "python3";
let reports, view;
const ids = (locator) => locator.evaluateAll((nodes) => nodes.map((n) => n.dataset.id).sort());

before(async () => {
  const out = join(mkdtempSync(join(tmpdir(), "fxlens-split-")), "report.json");
  execFileSync(PYTHON, [join(CLIENT_DIR, "test/fixtures/make_report.py"), join(CLIENT_DIR, "../examples/residual_mlp.py"), "ResidualMLP", out],
    { stdio: ["ignore", "ignore", "inherit"] });
  reports = JSON.parse(readFileSync(out, "utf8"));
  view = await openPage({ width: 1500, height: 900 });
  await view.show(reports.fx);
});

after(async () => {
  await view?.close();
});

test("choosing a level beside asks the extension for it and draws it next to the main one", async () => {
  const { page } = view;
  assert.equal(await page.locator("#split").isVisible(), false);
  await (await toolbarControl(page, "#split-level")).selectOption("aten");
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "split" && m.level === "aten"));
  await view.send({ type: "split", report: reports.aten });
  await page.locator("#split[data-draws]").waitFor();
  assert.equal(await page.locator("#split svg g.node").count(), reports.aten.graph.nodes.length);
  assert.equal(await page.locator("svg#graph g.node").count(), reports.fx.graph.nodes.length);
  assert.match(await page.locator("#split-caption").textContent(), /aten: \d+ nodes/);
  assert.deepEqual(await view.violations(), []);
});

test("a node chosen at the fx level marks the aten nodes of the same line", async () => {
  const { page } = view;
  await page.locator('svg#graph g.node[data-id="head"]').click();
  // `return self.head(h).sum()` (line 29): at the aten level, the linear and the sum
  await page.locator('#split g.node.linked[data-id="linear_3"]').waitFor();
  assert.deepEqual(await ids(page.locator("#split g.node.linked")), ["linear_3", "sum_1"]);
  await page.screenshot({ path: artifact("webview-split.png") });
});

test("a node chosen at the aten level marks the fx nodes of its line and reveals it", async () => {
  const { page } = view;
  // the split panned to line 29's nodes: linear (line 26) may lie outside its view
  await page.locator('#split g.node[data-id="linear"]').dispatchEvent("click");
  await page.locator('svg#graph g.node.linked[data-id="stem"]').waitFor();
  assert.deepEqual(await ids(page.locator("svg#graph g.node.linked")), ["stem"]);
  assert.equal(await page.locator('#split g.node.selected[data-id="linear"]').count(), 1);
  const reveal = (await view.posted()).filter((m) => m.type === "reveal").pop();
  assert.equal(reveal.node, "linear");
  assert.equal(reveal.line, 26);
});

test("the editor's cursor line marks its nodes at both levels", async () => {
  const { page } = view;
  await view.send({ type: "cursor", line: 14 });
  await page.locator('#split g.node.cursor[data-id="relu"]').waitFor();
  assert.deepEqual(await ids(page.locator("svg#graph g.node.cursor")), ["add_1", "add_3", "relu", "relu_1"]);
  assert.deepEqual(await ids(page.locator("#split g.node.cursor")), ["add_1", "add_3", "relu", "relu_1"]);
});

test("none closes the split", async () => {
  const { page } = view;
  await (await toolbarControl(page, "#split-level")).selectOption("");
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "split" && m.level === null));
  await view.send({ type: "split", report: null });
  await page.waitForFunction(() => document.getElementById("split").hidden);
  assert.deepEqual(view.errors, []);
});

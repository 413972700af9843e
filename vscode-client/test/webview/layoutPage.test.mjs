// The graph page at model scale on real engine payloads (bench/graph_view_reports.py): GPT-2's backward
// and dynamo levels drawn grouped, a level switched while another lays out, a layout past its budget,
// and everything open drawn at once without edge routing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact } from "../browser.mjs";
import { enginePayloads, openPage, waitForDraw } from "./page.mjs";

let reports, view, page;
const draws = () => page.evaluate(() => Number(document.body.dataset.draws ?? 0));
const dataset = () => page.evaluate(() => ({ ...document.body.dataset }));
const click = (locator) => locator.dispatchEvent("click");

before(async () => {
  reports = enginePayloads(["gpt2-12"], ["fx", "aten", "backward", "dynamo"])["gpt2-12"];
  view = await openPage({ width: 1300, height: 900 });
  page = view.page;
});

after(async () => view?.close());

test("GPT-2's backward (about 1,400 nodes) draws collapsed: the blocks, then their gradients in a group of their own", async () => {
  // 1,704 nodes in the joint graph (SDPA's CPU kernel and its backward, as a CPU build runs them); each saved
  // value is drawn once, not on both sides of the partition
  assert.ok(reports.backward.graph.nodes.length > 1300);
  await view.show(reports.backward);
  const shown = await dataset();
  assert.equal(shown.drawnLevel, "backward");
  assert.equal(shown.layoutHow, "elk"); // the full layout, within its budget
  assert.ok(Number(shown.boxes) < 60, `${shown.boxes} boxes drawn collapsed`);
  const gradients = page.locator('g.group.collapsed[data-group="∇"]');
  assert.match(await gradients.locator("text.name").textContent(), /^∇: backward pass/);
  // every block is drawn as its own group
  const blocks = await page.evaluate(() => [...document.querySelectorAll("g.group")].map((g) => g.dataset.group)
    .filter((name) => /^blocks\.\d+$/.test(name)));
  assert.equal(blocks.length, 12, blocks.join(" "));
  // the note names bytes in a unit a person reads, not "492084.3 KB"
  const note = await page.locator("#message").textContent();
  assert.match(note, /saves \d+ values for backward, \d+(\.\d+)? [KMG]B at the example size/);
  assert.doesNotMatch(note, /\d{4,}(\.\d)? KB/);
  await page.screenshot({ path: artifact("webview-gpt2-backward.png") });
  // the gradients open by module: one group per block's gradient, collapsed, alike
  await click(gradients.locator("text.toggle"));
  await page.locator('g.group.expanded[data-group="∇"]').waitFor();
  // alike but for the ends: the last block's gradients meet the head's, the first's the embeddings'
  const alike = await page.locator("g.group.collapsed.repeated[data-group^='∇.blocks.']").count();
  assert.ok(alike >= 10 && alike <= 12, `${alike} gradient groups drawn alike`);
});

test("a level chosen while another lays out: the chosen one is drawn, never the other under its name", async () => {
  await view.show(reports.fx);
  const before = await draws();
  // the backward report arrives; while its layout runs the user picks fx again (the host then posts it).
  // The messages are handed to the page's handler at once, one after another (dispatchEvent runs it
  // synchronously): the backward layout, quick in a warm worker, cannot answer in between
  const during = await page.evaluate(({ backward, fx }) => {
    const deliver = (data) => window.dispatchEvent(new MessageEvent("message", { data }));
    deliver({ type: "report", report: backward });
    const seen = { layout: document.body.dataset.layout, drawnLevel: document.body.dataset.drawnLevel, boxes: document.querySelectorAll("svg#graph g.node, svg#graph g.group").length };
    deliver({ type: "loading", className: "GPT", level: "fx" });
    deliver({ type: "report", report: fx });
    return seen;
  }, { backward: reports.backward, fx: reports.fx });
  // the fx drawing is taken down at once: nothing is shown under the name "backward"
  assert.deepEqual(during, { layout: "running", drawnLevel: undefined, boxes: 0 });
  await waitForDraw(page, before);
  const shown = await dataset();
  assert.equal(shown.drawnLevel, "fx");
  assert.equal(await page.locator("#level").inputValue(), "fx");
  assert.equal(await page.locator('g.group[data-group="∇"]').count(), 0);
  assert.equal(Number(shown.draws), before + 1, "the cancelled backward layout never drew");
  // a new drawing of fx after it still comes: the layout worker was replaced, not left busy
  await view.show(reports.aten);
  assert.equal((await dataset()).drawnLevel, "aten");
  assert.deepEqual(view.errors, []);
});

test("a layout past its budget is stopped: the page says so and draws in layers without edge routing", async () => {
  await page.evaluate(() => (document.body.dataset.layoutBudgetMs = "1"));
  try {
    await view.show(reports.dynamo);
    const shown = await dataset();
    assert.equal(shown.layoutHow, "quick");
    assert.equal(shown.drawnLevel, "dynamo");
    assert.match(await page.locator("#layout-status").textContent(), /ran past its 0 s budget and was stopped: drawn in layers, without edge routing/);
    assert.ok((await page.locator("svg#graph g.group, svg#graph g.node").count()) > 10);
  } finally {
    await page.evaluate(() => delete document.body.dataset.layoutBudgetMs);
  }
});

/** A decoder of `count` collapsed layers whose long edges outweigh its boxes: layer 0's mask is read by every layer, and every layer hands a value to the forward's output. */
function longEdgedDecoder(count) {
  const node = (id, scope, op = "call_function") => ({ id, op, target: "aten.mm.default", shape: "(2, 8, 64)", dtype: "float32", label: `${id}\n${op}\n(2, 8, 64) f32`, line: 5, col: 4, end_line: 5, end_col: 20, scope, function: "Layer.forward" });
  const nodes = [node("x", "", "placeholder")];
  const edges = [];
  let last = "x";
  for (let i = 0; i < count; i++) {
    nodes.push(node(`a${i}`, `layers.${i}`), node(`b${i}`, `layers.${i}`));
    edges.push({ source: last, target: `a${i}` }, { source: `a${i}`, target: `b${i}` }, { source: `b${i}`, target: "output" });
    i > 0 && edges.push({ source: "a0", target: `a${i}` }); // the mask, computed once
    last = `b${i}`;
  }
  nodes.push(node("output", "", "output"));
  const scopes = Object.fromEntries([...Array(count).keys()].map((i) => [`layers.${i}`, { class: "Layer", line: 12 }]));
  return { uri: "file:///decoder.py", class: "Decoder", level: "aten", levels: ["aten"], ok: true, printout: "", code: "", table: "", diagnostics: [], inputs: ["x"], graph: { nodes, edges }, scopes };
}

test("a graph whose edges run past thousands of rows is drawn in layers at once, and the page says why", async () => {
  // 120 layers: few boxes, but the mask's and the outputs' edges pass 14,000 rows in all, which ELK
  // routes for longer than its budget: the page does not wait for the budget to run out
  await view.show(longEdgedDecoder(120));
  const shown = await dataset();
  assert.equal(shown.drawnClass, "Decoder");
  assert.equal(shown.layoutHow, "quick");
  assert.ok(Number(shown.boxes) < 130, `${shown.boxes} boxes`);
  assert.match(await page.locator("#layout-status").textContent(), /^Decoder \(aten\): 358 edges, many of them long \(they pass [\d,]+ rows of boxes in all\), more than the full layout routes in time: drawn in layers, without edge routing\.$/);
  assert.equal(await page.locator("g.group.collapsed[data-group^='layers.']").count(), 120);
  // a shorter stack of the same shape gets the full layout, its note gone
  await view.show(longEdgedDecoder(12));
  assert.equal((await dataset()).layoutHow, "elk");
  assert.equal(await page.locator("#layout-status").isHidden(), true);
});

test("everything open on the backward level: its 1,500 boxes drawn at once, in layers", async () => {
  await view.show(reports.backward);
  const before = await draws();
  await page.click("#expand-all");
  await waitForDraw(page, before);
  const shown = await dataset();
  assert.equal(shown.layoutHow, "quick");
  assert.ok(Number(shown.boxes) > 1500);
  assert.match(await page.locator("#layout-status").textContent(), /more than the full layout draws in time/);
  await page.screenshot({ path: artifact("webview-gpt2-backward-open.png") });
  await page.click("#collapse-all");
  await page.waitForFunction(() => document.body.dataset.layoutHow === "elk");
  assert.equal(await page.locator("#layout-status").isHidden(), true);
});

test("the dynamo level is grouped by module, its lifted parameters named by their path", async () => {
  await view.show(reports.dynamo);
  assert.equal(await page.locator("g.group.collapsed[data-group^='blocks.']").count(), 12);
  await click(page.locator('g.group[data-group="blocks.0"] text.toggle'));
  await page.locator('g.group.collapsed[data-group="blocks.0.attn"]').waitFor();
  await click(page.locator('g.group[data-group="blocks.0.attn"] text.toggle'));
  const weight = page.locator("g.node text.name", { hasText: /^blocks\.0\.attn\.qkv\.weight$/ });
  await weight.waitFor();
  await page.screenshot({ path: artifact("webview-gpt2-dynamo.png") });
});

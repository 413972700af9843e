// The graph page's frame at any width, on GPT-2's real payloads: the Text tab really hides the graph,
// the toolbar stays on one row (the rest in its ⋯ menu), the details pane resizes, collapses and lies
// over the graph in a narrow panel, and a level beside gets its own pane, zoom and divider.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact } from "../browser.mjs";
import { enginePayloads, openPage, waitForDraw } from "./page.mjs";

let reports, view, page;
const box = (selector) => page.locator(selector).boundingBox();
const click = (locator) => locator.dispatchEvent("click");

before(async () => {
  reports = enginePayloads(["gpt2-12"])["gpt2-12"];
  view = await openPage({ width: 1300, height: 800 });
  page = view.page;
  await view.show(reports.fx);
});

after(async () => view?.close());

test("the Text tab hides the graph: the printout gets the whole width", async () => {
  await page.click("#tab-text");
  assert.equal(await page.locator("#graph-view").isHidden(), true);
  assert.equal(await page.locator("svg#graph").isHidden(), true);
  const printout = await box("#printout");
  assert.ok(printout.width > 1300 * 0.9, `the printout is ${printout.width} px wide`);
  assert.match(await page.locator("#printout").textContent(), /^graph\(\):/);
  await page.screenshot({ path: artifact("webview-text-tab.png") });
  await page.click("#tab-graph");
  assert.equal(await page.locator("#text-view").isHidden(), true);
  assert.ok((await box("svg#graph")).width > 600);
});

test("a half-width panel: the toolbar stays on one row, the rest in its ⋯ menu, still working", async () => {
  await page.setViewportSize({ width: 700, height: 800 });
  await page.waitForFunction(() => Number(document.body.dataset.overflowed) > 0);
  const toolbar = await box("#toolbar");
  assert.ok(toolbar.height < 48, `toolbar ${toolbar.height} px high: one row`);
  // every control that stayed on the row lies inside it
  for (const id of ["#title", "#level", "#overflow-button", "#tab-text"]) {
    const b = await box(id);
    assert.ok(b.x >= 0 && b.x + b.width <= 700 && b.y < toolbar.y + toolbar.height, `${id} inside the row`);
  }
  await page.click("#overflow-button");
  const menu = page.locator("#overflow-menu");
  await menu.locator("#expand-all").waitFor();
  await page.screenshot({ path: artifact("webview-narrow-menu.png") });
  const draws = await page.evaluate(() => Number(document.body.dataset.draws));
  await menu.locator("#expand-all").click();
  await waitForDraw(page, draws);
  assert.ok((await page.locator("g.group.expanded").count()) > 12);
  await click(page.locator("#collapse-all"));
  await waitForDraw(page, draws + 1);
});

test("in a narrow panel the details lie over the graph; collapsed, they leave it whole", async () => {
  const graphWidth = (await box("svg#graph")).width;
  await click(page.locator('g.group[data-group="blocks.3"] text.name'));
  await page.locator("#details h3", { hasText: "blocks.3" }).waitFor();
  // the graph is not squeezed to a strip: the pane overlays it
  assert.equal((await box("svg#graph")).width, graphWidth);
  const details = await box("#details");
  assert.ok(details.x + details.width <= 701 && details.width < 700 * 0.85);
  await page.screenshot({ path: artifact("webview-narrow-details.png") });
  await page.click("#details-collapse");
  assert.ok((await box("#details")).width <= 32);
  assert.equal(await page.locator("#details-body").isHidden(), true);
  await page.click("#details-collapse");
  await page.locator("#details h3", { hasText: "blocks.3" }).waitFor();
});

test("a wide panel: the details pane sits beside the graph and its divider resizes it", async () => {
  await page.setViewportSize({ width: 1300, height: 800 });
  await page.waitForFunction(() => document.getElementById("details").getBoundingClientRect().width > 300);
  const before = await box("#details");
  const graphBefore = await box("svg#graph");
  assert.ok(graphBefore.x + graphBefore.width <= before.x + 1, "beside, not over");
  await page.focus("#details-divider");
  for (let i = 0; i < 5; i++) {
    await page.keyboard.press("ArrowLeft");
  }
  const after = await box("#details");
  assert.ok(after.width >= before.width + 100, `${before.width} -> ${after.width}`);
  assert.ok((await box("svg#graph")).width < graphBefore.width - 100);
  // dragging the divider works as well
  const divider = await box("#details-divider");
  await page.mouse.move(divider.x + 2, divider.y + 100);
  await page.mouse.down();
  await page.mouse.move(divider.x + 202, divider.y + 100, { steps: 4 });
  await page.mouse.up();
  assert.ok((await box("#details")).width < after.width - 150);
});

test("beside: each graph in its own pane with its own zoom, a divider between them", async () => {
  await view.send({ type: "split", report: reports.aten });
  await page.waitForFunction(() => Number(document.getElementById("split").dataset.draws ?? 0) > 0);
  const main = await box("svg#graph");
  const side = await box("svg#split-graph");
  const divider = await box("#split-divider");
  assert.ok(main.x + main.width <= divider.x + 0.5 && divider.x + divider.width <= side.x + 0.5, "graph | divider | graph");
  const viewBox = (id) => page.locator(id).getAttribute("viewBox");
  const mainView = await viewBox("svg#graph");
  const sideView = await viewBox("svg#split-graph");
  await page.click("#split-zoom-in");
  assert.notEqual(await viewBox("svg#split-graph"), sideView);
  assert.equal(await viewBox("svg#graph"), mainView, "the main graph keeps its zoom");
  await page.focus("#split-divider");
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("ArrowLeft");
  assert.ok((await box("svg#split-graph")).width > side.width + 30);
  await page.screenshot({ path: artifact("webview-beside.png") });
  await view.send({ type: "split", report: null });
  assert.equal(await page.locator("#split-divider").isHidden(), true);
  assert.deepEqual(view.errors, []);
});

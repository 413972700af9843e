// A graph pass in a real VS Code (code-server with the packaged .vsix, headless Chromium): on the
// lesson's TinyNet, the class's "Run pass fuse-linear-relu on TinyNet" code action opens the graph view
// on the graph after the pass, the fused node marked added, fc1 and relu removed, the verdict "equal";
// the palette's "fxlens: Run graph pass…" picks the class, then one of the file's own passes.
import assert from "node:assert/strict";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { artifact, CLIENT_DIR, launchBrowser } from "../browser.mjs";
import { extensionLog, fileEditor, startCodeServer, testInterpreter } from "./codeServer.mjs";

// the first trace includes starting the worker and importing torch: generous, but still an event wait
const TRACE_TIMEOUT = Number(process.env.FXLENS_TRACE_TIMEOUT_MS ?? 180_000);
const UI_TIMEOUT = 60_000;

let codeServer, browser, page;
const editor = () => fileEditor(page, "tinynet.py");
// VS Code nests a webview's page in two iframes
const graphView = () => page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");

before(async () => {
  codeServer = await startCodeServer({ pythonExtension: testInterpreter() });
  copyFileSync(join(CLIENT_DIR, "../tests/fixtures/passes/tinynet.py"), join(codeServer.workspace, "tinynet.py"));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1800, height: 950 } });
  page.setDefaultTimeout(UI_TIMEOUT);
  await page.goto(codeServer.url);
  await page.locator(".monaco-workbench").waitFor();
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "tinynet.py" }).waitFor();
});

after(async () => {
  if (page) {
    await page.screenshot({ path: artifact("code-server-pass-last.png") }).catch(() => {});
  }
  await browser?.close();
  codeServer?.stop();
});

/** Waits for `locator`; on a timeout fails with a screenshot and the fxlens log. */
async function waitOrExplain(locator, timeout = UI_TIMEOUT) {
  try {
    await locator.waitFor({ timeout });
  } catch (error) {
    await page.screenshot({ path: artifact("code-server-pass-failed.png") });
    assert.fail(`${error.message}\n--- fxlens log ---\n${extensionLog(codeServer.userData)}`);
  }
}

test("Run pass fuse-linear-relu on TinyNet shows the graph after the pass, its changes marked, and the verdict", async () => {
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "tinynet.py" }).first().click();
  await page.locator(".tabs-container .tab.active", { hasText: "tinynet.py" }).waitFor();
  // traced: the class has its lens, so the server offers its passes
  await waitOrExplain(editor().locator(".codelens-decoration", { hasText: /fx 5 ·/ }).first(), TRACE_TIMEOUT);
  // the cursor on the class line, then the editor's Refactor… menu, as a person would
  await editor().locator(".view-line", { hasText: /class\sTinyNet/ }).click();
  await page.keyboard.press("F1");
  await page.keyboard.type("Refactor...");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: /^Refactor\.\.\./ }).first().click();
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "Run pass fuse-linear-relu on TinyNet" });
  await waitOrExplain(action);
  // the menu lies under a pointer block while it opens: choose with the keyboard, as its hint says
  for (let step = 0; step < 20 && !(await action.evaluate((row) => row.classList.contains("focused"))); step++) {
    await page.keyboard.press("ArrowDown");
  }
  await page.keyboard.press("Enter");

  await page.locator(".tab", { hasText: "FX pass: fuse-linear-relu on TinyNet" }).waitFor({ timeout: TRACE_TIMEOUT });
  const graph = graphView();
  await waitOrExplain(graph.locator('svg#graph g.node.change-added[data-id="fc1_relu"]'), TRACE_TIMEOUT);
  const removed = await graph.locator("svg#graph g.node.change-removed").evaluateAll((nodes) => nodes.map((n) => n.dataset.id));
  assert.deepEqual(removed.sort(), ["fc1", "relu"]);
  assert.match(await graph.locator("#pass .verdict-equal").textContent(), /verdict: equal/);
  assert.match(await graph.locator("#pass .headline").textContent(), /5 → 4 nodes/);
  // VS Code shows the preview in the view: the server's read-only markdown document is not opened
  assert.equal(await page.locator(".tabs-container .tab", { hasText: /\.md$/ }).count(), 0);
  await page.screenshot({ path: artifact("code-server-pass.png") });

  // the pane's changed node selects it; its click on the graph reveals the line it came from
  await graph.locator('svg#graph g.node[data-id="fc1_relu"]').click();
  await page.locator(".statusbar-item", { hasText: /Ln 13, Col \d+/ }).waitFor();
});

test("Back to the graph draws the class's own graph, unmarked", async () => {
  const graph = graphView();
  await graph.locator("#pass button", { hasText: "Back to the graph" }).click();
  await page.locator(".tab", { hasText: "FX graph: TinyNet (fx)" }).waitFor({ timeout: TRACE_TIMEOUT });
  await graph.locator('svg#graph g.node[data-id="relu"]:not(.change-removed)').waitFor();
  assert.equal(await graph.locator('svg#graph g.node[class*="change-"]').count(), 0);
  assert.equal(await graph.locator("#pass").isVisible(), false);
});

test("the palette's Run graph pass… picks a class of the file, then a pass, and shows its preview", async () => {
  // back in the model's editor (the graph view has the focus), the cursor in TinyNet's forward
  await page.locator(".tabs-container .tab", { hasText: "tinynet.py" }).first().click();
  await editor().locator(".view-line", { hasText: /def\sforward/ }).click();
  await page.keyboard.press("F1");
  await page.keyboard.type("fxlens: Run graph pass");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "fxlens: Run graph pass…" }).first().waitFor();
  await page.keyboard.press("Enter");
  // first the class: the one at the cursor comes first
  await waitOrExplain(page.locator(".quick-input-title", { hasText: "fxlens: Run graph pass… (1/2)" }));
  const first = page.locator(".quick-input-list .monaco-list-row").first();
  assert.match(await first.textContent(), /TinyNet.*at the cursor/);
  await page.keyboard.press("Enter");
  // then the pass: the built-ins and the file's own, each saying where it comes from
  await waitOrExplain(page.locator(".quick-input-title", { hasText: "fxlens: Run graph pass on TinyNet (2/2)" }));
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.filter({ hasText: "relu_to_sigmoid" }).first().waitFor();
  assert.match(await rows.filter({ hasText: "fuse-linear-relu" }).first().textContent(), /built-in/);
  assert.match(await rows.filter({ hasText: "relu_to_sigmoid" }).first().textContent(), /tinynet\.py/);
  await page.keyboard.type("relu_to_sigmoid");
  await page.screenshot({ path: artifact("code-server-pass-palette.png") });
  await page.keyboard.press("Enter");

  await page.locator(".tab", { hasText: "FX pass: relu_to_sigmoid on TinyNet" }).waitFor({ timeout: TRACE_TIMEOUT });
  const graph = graphView();
  await waitOrExplain(graph.locator('svg#graph g.node.change-retargeted[data-id="relu"]'), TRACE_TIMEOUT);
  assert.match(await graph.locator("#pass .verdict-changes-results").textContent(), /changes results/);
  // the proof's table keeps its SQNR column
  assert.deepEqual(await graph.locator("#pass table.outputs th").allTextContents(), ["output", "equal", "max |diff|", "SQNR dB", "largest at"]);
  await page.screenshot({ path: artifact("code-server-pass-palette-preview.png") });
});

// fxlens in a Jupyter notebook, in a real VS Code: code-server's built-in .ipynb support opens the
// notebook (no Jupyter extension, no kernel); fxlens traces its code cells as one module and shows
// the lens, the hover and the squiggle in the cells.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact, launchBrowser } from "../browser.mjs";
import { extensionLog, startCodeServer, testInterpreter } from "./codeServer.mjs";

const TRACE_TIMEOUT = Number(process.env.FXLENS_TRACE_TIMEOUT_MS ?? 180_000);
// any other wait: for the editor to show what it already has (generous for a busy 2-core CI machine)
const UI_TIMEOUT = 60_000;

let codeServer, browser, page;

const notebook = () => page.locator(".notebookOverlay.notebook-editor").first();
// a code cell's editor, by a text of its own (Monaco renders spaces as no-break spaces)
const cell = (text) => notebook().locator(".cell-editor-container", { has: page.locator(".view-line", { hasText: text }) }).first();

async function waitForFxlens(locator, timeout = TRACE_TIMEOUT) {
  try {
    await locator.waitFor({ timeout });
  } catch (error) {
    await page.screenshot({ path: artifact("code-server-notebook-failed.png") });
    assert.fail(`${error.message}\n--- fxlens log ---\n${extensionLog(codeServer.userData)}`);
  }
}

/** Moves the mouse onto the first occurrence of `word` in an editor line. */
async function hoverText(line, word) {
  const box = await line.evaluate((element, word) => {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const index = node.textContent.indexOf(word);
      if (index >= 0) {
        const range = document.createRange();
        range.setStart(node, index);
        range.setEnd(node, index + word.length);
        const { x, y, width, height } = range.getBoundingClientRect();
        return { x, y, width, height };
      }
    }
    return null;
  }, word);
  assert.ok(box, `'${word}' not found in the cell line`);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
}

before(async () => {
  codeServer = await startCodeServer({ python: testInterpreter() });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(UI_TIMEOUT);
  await page.goto(codeServer.url);
  await openNotebook("notebook.ipynb");
});

/** Opens an .ipynb in the notebook editor. A click before the workbench has registered the built-in
 * ipynb extension's notebook type opens the JSON text instead: the notebook is opened once an
 * extension is running (fxlens's status item, after a Python file made it start), when it is known. */
async function openNotebook(name) {
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "model.py" }).click();
  await page.locator(".statusbar-item", { hasText: "fxlens" }).first().waitFor();
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).click();
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor();
  await notebook().waitFor();
}

after(async () => {
  if (page) {
    await page.screenshot({ path: artifact("code-server-notebook-last.png") }).catch(() => {});
  }
  await browser?.close();
  codeServer?.stop();
});

test("the Module's cell gets the code lenses, the config's cell none", async () => {
  const net = cell(/class\sNet/);
  const lens = net.locator(".codelens-decoration", { hasText: /fx \d+/ }).first();
  await waitForFxlens(lens);
  assert.match(await lens.textContent(), /^Show graph\s*\|\s*fx 6 · aten \d+/);
  assert.equal(await cell(/class\sConfig/).locator(".codelens-decoration").count(), 0);
  await page.screenshot({ path: artifact("code-server-notebook-lens.png") });
});

test("hovering a forward line in a cell names its nodes", async () => {
  const line = cell(/class\sNet/).locator(".view-line", { hasText: /x\s=\storch\.relu\(block\(x\)\)/ });
  await hoverText(line, "relu");
  const hover = page.locator(".monaco-hover-content", { hasText: "call_module" });
  await hover.waitFor();
  const text = await hover.textContent();
  assert.match(text, /blocks\.0/);
  assert.match(text, /torch\.relu|aten\.relu/);
  assert.match(text, /line 9/); // the cell's own line number
  // the screenshot waits for the hover's fade-in to end
  await page.waitForFunction(() => [...document.querySelectorAll(".monaco-hover")].some((e) => getComputedStyle(e).opacity === "1"));
  await page.screenshot({ path: artifact("code-server-notebook-hover.png") });
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");
});

test("a data-dependent if in a cell is squiggled at its line", async () => {
  const gate = cell(/class\sGate/);
  const squiggle = gate.locator(".squiggly-error").first();
  await waitForFxlens(squiggle);
  // the notebook scrolls its own list (scrollIntoView does not move it): wheel until the cell shows
  const box = await notebook().boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, 420);
  await gate.locator(".view-line", { hasText: /return\sself\.fc\(x\)/ }).waitFor();
  await page.waitForFunction((limit) => {
    const line = [...document.querySelectorAll(".squiggly-error")].pop();
    return line && line.getBoundingClientRect().bottom < limit;
  }, box.y + box.height);
  await squiggle.hover({ force: true });
  await page.locator(".monaco-hover-content", { hasText: /control flow/i }).first().waitFor();
  await page.screenshot({ path: artifact("code-server-notebook-diagnostic.png") });
  // the squiggle is on the `if` line of that cell, not elsewhere
  const lines = await gate.locator(".view-line").allTextContents();
  const squiggleTop = (await squiggle.boundingBox()).y;
  const ifLine = gate.locator(".view-line", { hasText: /if\sx\.sum\(\)\s>\s0:/ });
  const ifTop = (await ifLine.boundingBox()).y;
  assert.ok(Math.abs(squiggleTop - ifTop) < 12, `squiggle at y=${squiggleTop}, if line at y=${ifTop}: ${lines.join(" | ")}`);
});

test("the graph opens from a notebook cell: the palette offers Show FX graph there, the lens link lies inside the editor", async () => {
  const net = cell(/class\sNet/);
  // back up to the Net cell (the notebook scrolls its own list), the cursor in it, then the palette
  const list = await notebook().boundingBox();
  await page.mouse.move(list.x + list.width / 2, list.y + list.height / 2);
  await page.mouse.wheel(0, -2000);
  await net.locator(".view-line", { hasText: /def\sforward/ }).waitFor();
  await net.locator(".view-line", { hasText: /def\sforward/ }).click();
  await page.keyboard.press("F1");
  await page.keyboard.type("fxlens: Show FX graph");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "fxlens: Show FX graph" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab", { hasText: "FX graph: Net (fx)" }).waitFor({ timeout: TRACE_TIMEOUT });
  // fxlens's webview: the notebook's outputs live in a webview of their own
  const graph = page.frameLocator('iframe.webview.ready[src*="extensionId=fxlens"]').frameLocator("iframe#active-frame");
  await waitForFxlens(graph.locator('svg#graph g.node[data-id="output"]'));
  assert.ok((await graph.locator("svg#graph g.node").count()) >= 5);
  await page.screenshot({ path: artifact("code-server-notebook-graph.png") });
  // the notebook now shares the window with the graph: its lens's link still lies inside it
  const link = net.locator(".codelens-decoration a", { hasText: "Show graph" }).first();
  await link.waitFor();
  const bounds = await notebook().boundingBox();
  const box = await link.boundingBox();
  assert.ok(box.x + box.width <= bounds.x + bounds.width, `link at ${box.x}+${box.width}, notebook ${bounds.x}+${bounds.width}`);
  await link.click();
  await graph.locator('body[data-drawn-class="Net"][data-drawn-level="fx"]').waitFor();
});

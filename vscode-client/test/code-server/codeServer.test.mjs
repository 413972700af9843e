// fxlens in a real VS Code: code-server with the packaged .vsix, driven in headless Chromium.
// A person whose Python extension has selected an interpreter with torch opens a PyTorch file and,
// configuring nothing of fxlens, sees lenses, hovers, a diagnostic and the graph.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact, CLIENT_DIR, launchBrowser } from "../browser.mjs";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extensionLog, fileEditor, startCodeServer, testInterpreter } from "./codeServer.mjs";

// The first trace includes starting the worker and importing torch: generous, but still an event wait.
const TRACE_TIMEOUT = Number(process.env.FXLENS_TRACE_TIMEOUT_MS ?? 180_000);
// any other wait: for the editor to show what it already has (generous for a busy 2-core CI machine)
const UI_TIMEOUT = 60_000;

let codeServer, browser, page;

async function openFile(name) {
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click();
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor();
}

/** Brings an open file's editor to the front by its tab. A click inside the graph's webview makes the
 * graph's group the active one (or not yet: VS Code learns of the webview's focus asynchronously), so
 * typing right after it may go nowhere; typing must go to this file. */
async function focusFile(name) {
  await page.locator(".tabs-container .tab", { hasText: name }).first().click();
  await page.locator(".editor-group-container.active .tabs-container .tab.active", { hasText: name }).waitFor();
}

/** Fails at once when an earlier step left fxlens not running, instead of every wait timing out. */
async function requireFxlensRunning() {
  if (await page.locator(".statusbar-item", { hasText: /fxlens: (unavailable|stopped)/ }).count()) {
    assert.fail(`fxlens is not running\n--- fxlens log ---\n${extensionLog(codeServer.userData)}`);
  }
}

/** Waits for `locator`, failing at once (with the fxlens log) if fxlens reports it cannot run. */
async function waitForFxlens(locator, timeout = TRACE_TIMEOUT) {
  const broken = page.locator(".statusbar-item", { hasText: /fxlens: (unavailable|stopped)/ });
  const outcome = await Promise.race([
    locator.waitFor({ timeout }).then(() => "ok", (error) => error),
    // when fxlens never breaks, this wait just ends with the race lost
    broken.waitFor({ timeout }).then(() => "broken", () => new Promise(() => {})),
  ]);
  if (outcome !== "ok") {
    await page.screenshot({ path: artifact("code-server-failed.png") });
    const why = outcome === "broken" ? "fxlens reports it cannot run" : outcome.message;
    assert.fail(`${why}\n--- fxlens log ---\n${extensionLog(codeServer.userData)}`);
  }
}

/** Moves the mouse onto the first occurrence of `word` in an editor line (tokens split text unpredictably). */
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
  assert.ok(box, `'${word}' not found in the editor line`);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
}

/** Does `act()` again, `retreat()` between tries, until `shown` appears: what a person does when the editor did not
 * respond. Waits for `shown`, never a fixed time; fails after UI_TIMEOUT in all. */
async function actUntilShown(act, shown, retreat) {
  const deadline = Date.now() + UI_TIMEOUT;
  for (;;) {
    await act();
    try {
      await shown.waitFor({ timeout: Math.min(10_000, Math.max(1, deadline - Date.now())) });
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await retreat();
    }
  }
}

/** Hovers with `hover()` until the hover widget shows `content`, moving the mouse off and back: once, at 3 test
 * files per 2 cores, the squiggle was drawn and hovered and no widget came in 60 s (the squiggle's decorations are
 * drawn again as later levels' diagnostics arrive). */
const hoverUntilShown = (hover, content) => actUntilShown(hover, content, () => page.mouse.move(0, 0));

const editor = (name) => fileEditor(page, name);

/** Puts the cursor of `name` on `line` with Go to Line, and again until the status bar shows it there: the keys
 * go to the focused editor, and a late focus of the graph's webview (`fileEditor`) can take them; a person would just
 * click into the file and try again. */
async function goToLine(name, line) {
  const shown = page.locator(".statusbar-item", { hasText: new RegExp(`Ln ${line},`) });
  const go = async () => {
    await focusFile(name);
    await editor(name).locator(".view-line").first().click();
    await page.keyboard.press("Control+G");
    await page.keyboard.type(String(line));
    await page.keyboard.press("Enter");
  };
  await actUntilShown(go, shown, () => page.keyboard.press("Escape"));
}

before(async () => {
  codeServer = await startCodeServer({ pythonExtension: testInterpreter() });
  // a real-size model beside the small ones: the graph view's module hierarchy
  copyFileSync(join(CLIENT_DIR, "../bench/models/gpt2_small.py"), join(codeServer.workspace, "gpt2_small.py"));
  // a GPT-2-sized decoder of our own: its backward level has ~2,600 nodes
  copyFileSync(join(CLIENT_DIR, "test/fixtures/decoder12.py"), join(codeServer.workspace, "decoder12.py"));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(UI_TIMEOUT);
  await page.goto(codeServer.url);
  await page.locator(".monaco-workbench").waitFor();
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "model.py" }).waitFor();
});

after(async () => {
  if (page) {
    await page.screenshot({ path: artifact("code-server-last.png") }).catch(() => {});
  }
  await browser?.close();
  codeServer?.stop();
});

test("a model file gets code lenses with node counts", async () => {
  await openFile("model.py");
  const lens = editor("model.py").locator(".codelens-decoration", { hasText: /fx \d+/ }).first();
  await waitForFxlens(lens);
  // the graph link first, then the short summary
  assert.match(await lens.textContent(), /^Show graph\s*\|\s*fx \d+ · aten \d+/);
  await page.screenshot({ path: artifact("code-server-lens.png") });
  assert.match(extensionLog(codeServer.userData), /\(from python-extension\): Python 3\.\d+\.\d+, torch /);
});

test("hovering a forward line shows its nodes: opcode, target, shape", async () => {
  await requireFxlensRunning();
  // Monaco renders spaces as no-break spaces: match the line with a regular expression
  const line = editor("model.py").locator(".view-line", { hasText: /h\s=\sself\.stem\(x\)/ });
  await hoverText(line, "stem");
  const hover = page.locator(".monaco-hover-content", { hasText: "call_module" });
  await hover.waitFor();
  const text = await hover.textContent();
  assert.match(text, /call_module/);
  assert.match(text, /stem/);
  assert.match(text, /4, 16/);
  await page.screenshot({ path: artifact("code-server-hover.png") });
  await page.keyboard.press("Escape");
});

test("an untraceable file gets a diagnostic at the failing line", async () => {
  await requireFxlensRunning();
  await openFile("untraceable.py");
  const squiggle = editor("untraceable.py").locator(".squiggly-error, .squiggly-warning").first();
  await waitForFxlens(squiggle);
  const hover = page.locator(".monaco-hover-content", { hasText: /control flow|traced/i }).first();
  await hoverUntilShown(() => squiggle.hover({ force: true }), hover);
  await page.screenshot({ path: artifact("code-server-diagnostic.png") });
  await page.keyboard.press("Escape");
  // its graph view lists the problem instead of drawing an empty graph
  await editor("untraceable.py").locator(".codelens-decoration a", { hasText: "Show graph" }).first().click();
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await graph.locator("#diagnostics li", { hasText: /control flow/ }).first().waitFor();
  assert.equal(await graph.locator("svg#graph g.node").count(), 0);
  await page.screenshot({ path: artifact("code-server-graph-untraceable.png") });
});

test("Show FX graph opens the drawn graph beside the editor; a click reveals the node's line", async () => {
  await requireFxlensRunning();
  await openFile("model.py");
  // the second class of the file, ResidualMLP (15 fx nodes): its lens line, not the DOM's last lens
  // (Monaco keeps view zones in no particular order)
  await editor("model.py").locator(".codelens-decoration", { hasText: /fx 15 ·/ }).locator("a", { hasText: "Show graph" }).click();
  // VS Code nests a webview's page in two iframes
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await waitForFxlens(graph.locator('svg#graph g.node[data-id="head"]'));
  assert.ok((await graph.locator("svg#graph g.node").count()) >= 10);
  assert.ok((await graph.locator("svg#graph path.edge").count()) >= 10);
  await page.screenshot({ path: artifact("code-server-graph.png") });

  await graph.locator('g.node[data-id="head"]').click();
  // the editor's status bar shows the selection that the reveal made: `self.head(h)` is on line 29
  await page.locator(".statusbar-item", { hasText: /Ln 29, Col \d+/ }).waitFor();
  // and the view follows the cursor: the nodes of line 29 are highlighted
  await graph.locator('g.node.cursor[data-id="head"]').waitFor();
});

test("the level switcher draws the aten graph", async () => {
  await requireFxlensRunning();
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await graph.locator("#level").selectOption("aten");
  await graph.locator("svg#graph g.node text", { hasText: "aten.linear.default" }).first().waitFor();
  await page.screenshot({ path: artifact("code-server-graph-aten.png") });
});

test("the graph follows edits: a new line's node appears", async () => {
  await requireFxlensRunning();
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await focusFile("model.py");
  await editor("model.py").locator(".view-line", { hasText: /h\s=\sself\.stem\(x\)/ }).click();
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("h = h * 2");
  await graph.locator('svg#graph g.node[data-id="mul"]').waitFor({ timeout: TRACE_TIMEOUT });
  await page.screenshot({ path: artifact("code-server-graph-edited.png") });
});

test("the palette's Show FX graph draws the class around the cursor", async () => {
  await requireFxlensRunning();
  await focusFile("model.py");
  await editor("model.py").locator(".view-line", { hasText: /y\s=\sself\.fc\(x\)/ }).click();
  await page.keyboard.press("F1");
  await page.keyboard.type("fxlens: Show FX graph");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "fxlens: Show FX graph" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab", { hasText: "FX graph: Residual (fx)" }).waitFor({ timeout: TRACE_TIMEOUT });
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await graph.locator('svg#graph g.node[data-id="fc"]').waitFor();
});

test("Show FX graph on a GPT-2-shaped file draws its blocks collapsed; a block's click reveals the line that calls it", async () => {
  await requireFxlensRunning();
  await openFile("gpt2_small.py");
  // the cursor into GPT.forward (line 79), which brings GPT's class line into view
  await goToLine("gpt2_small.py", 79);
  // traced once GPT, the only class of the file with hundreds of fx nodes, has its lens; then the
  // palette's Show FX graph draws the class around the cursor
  await waitForFxlens(editor("gpt2_small.py").locator(".codelens-decoration", { hasText: /fx \d{3,} ·/ }).first());
  await page.keyboard.press("F1");
  await page.keyboard.type("fxlens: Show FX graph");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "fxlens: Show FX graph" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab", { hasText: "FX graph: GPT (fx)" }).waitFor({ timeout: TRACE_TIMEOUT });
  const graph = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await waitForFxlens(graph.locator('svg#graph g.group.collapsed[data-group="blocks.11"]'));
  assert.equal(await graph.locator("svg#graph g.group.collapsed[data-group^='blocks.']").count(), 12);
  await page.screenshot({ path: artifact("code-server-graph-gpt2.png") });
  // the block may lie below the view: click it as its own event
  await graph.locator('g.group[data-group="blocks.5"] text.name').dispatchEvent("click");
  // GPT.forward: `x = block(x)` is line 81
  await page.locator(".statusbar-item", { hasText: /Ln 81, Col \d+/ }).waitFor();
  await graph.locator('g.group[data-group="blocks.5"] text.toggle').dispatchEvent("click");
  await graph.locator('g.group.expanded[data-group="blocks.5"]').waitFor();
  await graph.locator('g.group.collapsed[data-group="blocks.5.attn"]').waitFor();
  await page.screenshot({ path: artifact("code-server-graph-gpt2-block.png") });
});

const graphFrame = () => page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");

test("at 1400 px a GPT-2-sized class's lens row fits: its graph link lies inside the editor", async () => {
  await requireFxlensRunning();
  await openFile("decoder12.py");
  // the class line (66) in view: Monaco draws only the lenses of lines on screen
  await goToLine("decoder12.py", 66);
  // the row measured is the whole one: the class's cost comes after its trace and lengthens the row (and
  // Monaco draws the row again when it comes, so a row measured before could be gone while it is measured)
  const row = editor("decoder12.py").locator(".codelens-decoration", { hasText: /fx \d{3} · aten \d{3} · [\d.]+ [KMGTP]?FLOP/ });
  await waitForFxlens(row);
  const bounds = await editor("decoder12.py").boundingBox();
  const link = row.locator("a", { hasText: "Show graph" });
  const box = await link.boundingBox();
  assert.ok(box.x >= bounds.x && box.x + box.width <= bounds.x + bounds.width, `link at ${box.x}+${box.width}, editor ${bounds.x}+${bounds.width}`);
  // the whole row fits: its last character is inside the editor too
  const rowBox = await row.boundingBox();
  const text = await row.evaluate((element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return range.getBoundingClientRect().right;
  });
  assert.ok(text <= bounds.x + bounds.width, `lens row ends at ${text} (${rowBox.width} px), editor at ${bounds.x + bounds.width}`);
  await page.screenshot({ path: artifact("code-server-lens-fits.png") });
  await link.click();
  await page.locator(".tab", { hasText: "FX graph: Decoder (fx)" }).waitFor({ timeout: TRACE_TIMEOUT });
  await waitForFxlens(graphFrame().locator('svg#graph g.group.collapsed[data-group="layers.11"]'));
});

test("GPT-2-sized backward draws; a level chosen during its layout is the level shown", async () => {
  await requireFxlensRunning();
  const graph = graphFrame();
  await graph.locator("#level").selectOption("backward");
  // traced on request (not in fxlens.levels), then laid out: the gradients in a group of their own
  await waitForFxlens(graph.locator('body[data-drawn-level="backward"]'));
  await graph.locator('svg#graph g.group.collapsed[data-group="∇"]').waitFor();
  assert.ok(Number(await graph.locator("body").getAttribute("data-nodes")) > 2000);
  await page.locator(".tab", { hasText: "FX graph: Decoder (backward)" }).waitFor();
  await page.screenshot({ path: artifact("code-server-graph-backward.png") });
  // again, now from the server's cache: its layout starts at once, and aten is chosen while it runs
  await graph.locator("#level").selectOption("fx");
  await graph.locator('body[data-drawn-level="fx"]').waitFor();
  // (backward now lays out in well under a second: aten is chosen at once, while backward's payload and
  // layout are still on their way, rather than after waiting to see its layout running)
  const draws = Number(await graph.locator("body").getAttribute("data-draws"));
  await graph.locator("#level").selectOption("backward");
  await graph.locator("#level").selectOption("aten");
  await graph.locator('body[data-drawn-level="aten"]').waitFor({ timeout: TRACE_TIMEOUT });
  await page.locator(".tab", { hasText: "FX graph: Decoder (aten)" }).waitFor();
  assert.equal(await graph.locator("#level").inputValue(), "aten");
  assert.equal(await graph.locator('svg#graph g.group[data-group="∇"]').count(), 0);
  assert.equal(Number(await graph.locator("body").getAttribute("data-draws")), draws + 1, "the cancelled backward layout never drew");
  await page.screenshot({ path: artifact("code-server-graph-switched.png") });
});

test("the Text tab hides the graph: the printout gets the panel's width", async () => {
  await requireFxlensRunning();
  const graph = graphFrame();
  await graph.locator("#tab-text").click();
  await graph.locator("#printout").waitFor();
  assert.equal(await graph.locator("svg#graph").isHidden(), true);
  const panel = await page.locator("iframe.webview.ready").boundingBox();
  const printout = await graph.locator("#printout").boundingBox();
  assert.ok(printout.width > panel.width * 0.85, `printout ${printout.width} px of a ${panel.width} px panel`);
  assert.match(await graph.locator("#printout").textContent(), /^graph\(\):/);
  await page.screenshot({ path: artifact("code-server-text-tab.png") });
  await graph.locator("#tab-graph").click();
  await graph.locator("svg#graph").waitFor();
});

test("a settings change reaches the server: inlay hints show the shapes lines assign", async () => {
  await requireFxlensRunning();
  // as a person would: the Settings editor, then back to the model
  await page.keyboard.press("F1");
  await page.keyboard.type("Preferences: Open User Settings");
  // the row whose label is exactly this command (not "... (JSON)"); rows may carry "recently used"
  const label = page.locator(".label-name", { hasText: /^Preferences: Open User Settings$/ });
  await page.locator(".quick-input-list .monaco-list-row", { has: label }).first().click();
  await page.locator(".settings-editor").waitFor();
  await page.keyboard.type("fxlens.inlayHints");
  await page.locator(".setting-item-bool .setting-value-checkbox").first().click();
  await focusFile("model.py");
  const line = editor("model.py").locator(".view-line", { hasText: /h\s=\sself\.stem\(x\)/ });
  await line.filter({ hasText: /\(4,\s16\)\sf32/ }).waitFor({ timeout: TRACE_TIMEOUT });
  await page.screenshot({ path: artifact("code-server-inlay.png") });
});

test("a new interpreter chosen in the Python extension is followed; one without torch gets one notification", async () => {
  await requireFxlensRunning();
  const venv = join(mkdtempSync(join(tmpdir(), "fxlens-no-torch-")), "venv");
  execFileSync(testInterpreter(), ["-m", "venv", "--without-pip", venv]);
  const python = join(venv, "bin", "python");
  await page.keyboard.press("F1");
  await page.keyboard.type("Test: Select Python interpreter");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Select Python interpreter" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget input").first().waitFor();
  await page.keyboard.type(python);
  await page.keyboard.press("Enter");
  const toast = page.locator(".notification-toast", { hasText: "torch is not installed" });
  await toast.first().waitFor({ timeout: TRACE_TIMEOUT });
  const text = await toast.first().textContent();
  assert.ok(text.includes(python), `the notification names the interpreter: ${text}`);
  assert.match(text, /-m pip install torch/);
  await page.locator(".statusbar-item", { hasText: "fxlens: unavailable" }).waitFor();
  assert.equal(await toast.count(), 1);
  await page.screenshot({ path: artifact("code-server-no-torch.png") });
});

// The graph page in headless Chromium, with the extension's HTML and CSP, fed a real report that the
// fxlens engine produced for examples/residual_mlp.py.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { artifact, CLIENT_DIR, launchBrowser } from "../browser.mjs";
import { toolbarControl } from "./page.mjs";

const require = createRequire(import.meta.url);
const { graphPageHtml } = require(join(CLIENT_DIR, "out/test/webviewHtml.cjs"));
const PYTHON = process.env.FXLENS_TEST_PYTHON ?? "python3";
const NONCE = "testnonce0123456789";

let reports, server, origin, browser, page;
const violations = () => page.evaluate(() => window.__violations);
const posted = () => page.evaluate(() => window.__posted);
const send = (message) => page.evaluate((m) => window.postMessage(m, "*"), message);

before(async () => {
  const out = join(mkdtempSync(join(tmpdir(), "fxlens-report-")), "report.json");
  execFileSync(PYTHON, [join(CLIENT_DIR, "test/fixtures/make_report.py"), join(CLIENT_DIR, "../examples/residual_mlp.py"), "ResidualMLP", out], { stdio: "inherit" });
  reports = JSON.parse(readFileSync(out, "utf8"));

  const files = { "/main.js": ["dist/webview/main.js", "text/javascript"], "/main.css": ["dist/webview/main.css", "text/css"] };
  server = createServer((request, response) => {
    if (request.url === "/") {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(graphPageHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/main.js`, styleUri: `${origin}/main.css` }));
    } else if (files[request.url]) {
      const [path, type] = files[request.url];
      response.writeHead(200, { "content-type": type });
      response.end(readFileSync(join(CLIENT_DIR, path)));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;

  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  // what VS Code gives a webview: acquireVsCodeApi().postMessage, recorded here for the assertions
  await page.addInitScript(() => {
    window.__posted = [];
    window.__violations = [];
    window.acquireVsCodeApi = () => ({ postMessage: (message) => window.__posted.push(message) });
    document.addEventListener("securitypolicyviolation", (event) => window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(origin);
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "ready"));
  assert.deepEqual(errors, []);
});

after(async () => {
  await browser?.close();
  server?.close();
});

test("the page draws every node and edge of the fx graph", async () => {
  const fx = reports.fx;
  await send({ type: "report", report: fx });
  await page.locator("svg#graph g.node").nth(fx.graph.nodes.length - 1).waitFor();
  assert.equal(await page.locator("svg#graph g.node").count(), fx.graph.nodes.length);
  assert.equal(await page.locator("svg#graph path.edge").count(), fx.graph.edges.length);
  const stem = page.locator('g.node[data-id="stem"]');
  assert.deepEqual(await stem.locator("text").allTextContents(), ["stem", "call_module[stem]", "(4, 16) f32"]);
  assert.equal(await page.locator("#level option").count(), fx.levels.length);
  assert.deepEqual(await violations(), [], "the page must run under its strict CSP");
  await page.screenshot({ path: artifact("webview-graph.png") });
});

test("clicking a node asks the editor to reveal its source span", async () => {
  await page.locator('g.node[data-id="stem"]').click();
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "reveal"));
  const reveal = (await posted()).find((m) => m.type === "reveal");
  const stem = reports.fx.graph.nodes.find((n) => n.id === "stem");
  assert.deepEqual(reveal, { type: "reveal", node: "stem", line: stem.line, col: stem.col, end_line: stem.end_line, end_col: stem.end_col });
  assert.equal(stem.line, 26, "examples/residual_mlp.py: `h = self.stem(x)` is line 26");
});

test("the nodes of the cursor's line are highlighted", async () => {
  const expected = reports.fx.graph.nodes.filter((n) => n.line !== null && n.line <= 13 && 13 <= n.end_line).map((n) => n.id);
  assert.ok(expected.length >= 2, "line 13 (`y = self.fc(x) + self.shift`) makes nodes in both blocks");
  await send({ type: "cursor", line: 13 });
  await page.locator("g.node.cursor").nth(expected.length - 1).waitFor();
  assert.deepEqual((await page.locator("g.node.cursor").evaluateAll((els) => els.map((e) => e.dataset.id))).sort(), expected.sort());
  await page.screenshot({ path: artifact("webview-cursor.png") });
});

test("the search box marks matching nodes", async () => {
  await page.locator("#search").fill("relu");
  await page.locator("#search-count", { hasText: "2 matches" }).waitFor();
  assert.deepEqual(await page.locator("g.node.match").evaluateAll((els) => els.map((e) => e.dataset.id)), ["relu", "relu_1"]);
  // Enter pans to the next match
  const viewBox = await page.locator("svg#graph").getAttribute("viewBox");
  await page.locator("#search").press("Enter");
  await page.waitForFunction((old) => document.querySelector("svg#graph").getAttribute("viewBox") !== old, viewBox);
  await page.locator("#search").fill("");
  await page.locator("g.node.match").first().waitFor({ state: "detached" });
});

test("the level switcher asks for the aten graph and draws it", async () => {
  await page.locator("#level").selectOption("aten");
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "level" && m.level === "aten"));
  const aten = reports.aten;
  await send({ type: "report", report: aten });
  await page.locator("#title", { hasText: "ResidualMLP" }).waitFor();
  await page.waitForFunction((count) => document.querySelectorAll("svg#graph g.node").length === count, aten.graph.nodes.length);
  assert.ok(await page.locator("g.node text", { hasText: "aten.linear.default" }).count() > 0);
  await page.screenshot({ path: artifact("webview-aten.png") });
});

/** The follow-cursor box, from the toolbar's ⋯ menu when the row has no room for it. */
async function follow(checked) {
  await (await toolbarControl(page, "#follow")).setChecked(checked);
  await page.keyboard.press("Escape");
}

test("the wheel zooms, and a redraw of the same graph after an edit keeps the view", async () => {
  const viewBox = () => page.locator("svg#graph").getAttribute("viewBox");
  // follow mode would re-centre on the cursor's node after the redraw (by design): what this test checks
  // is that the redraw itself keeps the view
  await follow(false);
  const before = await viewBox();
  await page.locator("svg#graph").hover();
  await page.mouse.wheel(0, -300);
  await page.waitForFunction((old) => document.querySelector("svg#graph").getAttribute("viewBox") !== old, before);
  const zoomed = await viewBox();
  const draws = await page.evaluate(() => Number(document.body.dataset.draws));
  await send({ type: "report", report: reports.aten });
  await page.waitForFunction((n) => Number(document.body.dataset.draws) === n + 1, draws);
  assert.equal(await viewBox(), zoomed);
  await follow(true);
  // Fit shows the whole graph: the view box is at least as large as the drawing
  await page.locator("#fit").click();
  await page.waitForFunction((old) => document.querySelector("svg#graph").getAttribute("viewBox") !== old, zoomed);
  const [, , width, height] = (await viewBox()).split(" ").map(Number);
  const drawing = await page.locator("svg#graph g.nodes").evaluate((g) => { const box = g.getBBox(); return { width: box.width, height: box.height }; });
  assert.ok(width >= drawing.width && height >= drawing.height, `${width}x${height} vs ${drawing.width}x${drawing.height}`);
});

test("the text tab shows the printout, the generated code and the shape table", async () => {
  await page.locator("#tab-text").click();
  await page.locator("#text-view").waitFor({ state: "visible" });
  assert.match(await page.locator("#printout").textContent(), /^graph\(\):/);
  assert.match(await page.locator("#code").textContent(), /def forward/);
  assert.match(await page.locator("#table").textContent(), /node\s+opcode\s+target/);
  await page.screenshot({ path: artifact("webview-text.png") });
  await page.locator("#tab-graph").click();
});

test("a level that failed shows its diagnostics and reveals their line", async () => {
  const failed = { ...reports.fx, ok: false, graph: { nodes: [], edges: [] },
    diagnostics: [{ line: 13, col: 8, end_line: 13, end_col: 30, severity: "error", category: "control-flow", message: "traced value used in an if", explanation: "symbolic values have no truth value", fix: "use torch.where" }] };
  await send({ type: "report", report: failed });
  await page.locator("#diagnostics li", { hasText: "traced value used in an if" }).waitFor();
  assert.equal(await page.locator("svg#graph g.node").count(), 0);
  await page.locator("#diagnostics li a").click();
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "reveal" && m.line === 13 && m.node === ""));
});

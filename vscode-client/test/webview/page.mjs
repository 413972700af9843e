// The graph page served with the extension's own HTML and CSP, opened in headless Chromium with what
// VS Code gives a webview (acquireVsCodeApi().postMessage, recorded in window.__posted). Shared by
// the page tests and the view's benchmark (bench/graph_view.mjs).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLIENT_DIR, launchBrowser } from "../browser.mjs";

const require = createRequire(import.meta.url);
const PYTHON = process.env.FXLENS_TEST_PYTHON ?? "python3";
const NONCE = "testnonce0123456789";

/** Real showGraph payloads of bench models (bench/graph_view_reports.py): {key: {level: payload}}. */
export function enginePayloads(keys, levels = ["fx", "aten"]) {
  const out = mkdtempSync(join(tmpdir(), "fxlens-view-reports-"));
  execFileSync(PYTHON, [join(CLIENT_DIR, "../bench/graph_view_reports.py"), out, "--levels", levels.join(","), ...keys], { stdio: ["ignore", "ignore", "inherit"] });
  return Object.fromEntries(keys.map((key) => [key, JSON.parse(readFileSync(join(out, `${key}.json`), "utf8"))]));
}

export async function openPage({ width = 1300, height = 900 } = {}) {
  const { graphPageHtml } = require(join(CLIENT_DIR, "out/test/webviewHtml.cjs"));
  const files = { "/main.js": ["dist/webview/main.js", "text/javascript"], "/main.css": ["dist/webview/main.css", "text/css"] };
  let origin;
  const server = createServer((request, response) => {
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
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width, height } });
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
  return {
    page,
    errors,
    violations: () => page.evaluate(() => window.__violations),
    posted: () => page.evaluate(() => window.__posted),
    /** Posts a report as the extension does and waits until it is drawn. */
    async show(report) {
      const draws = await page.evaluate(() => Number(document.body.dataset.draws ?? 0));
      await page.evaluate((m) => window.postMessage(m, "*"), { type: "report", report });
      await waitForDraw(page, draws);
    },
    send: (message) => page.evaluate((m) => window.postMessage(m, "*"), message),
    async close() {
      await browser.close();
      server.close();
    },
  };
}

/** Waits for the drawing after the `draws`-th one. */
export function waitForDraw(page, draws) {
  return page.waitForFunction((n) => Number(document.body.dataset.draws ?? 0) > n && document.body.dataset.layout === "done", draws);
}

/** VS Code's light theme, as a webview gets it: variables on <html>, a class on <body>. */
export async function useLightTheme(page) {
  await page.evaluate(() => {
    const light = { "--vscode-editor-background": "#ffffff", "--vscode-editor-foreground": "#1f1f1f", "--vscode-descriptionForeground": "#616161",
      "--vscode-panel-border": "#e5e5e5", "--vscode-editorWidget-background": "#f8f8f8", "--vscode-focusBorder": "#005fb8",
      "--vscode-sideBar-background": "#f8f8f8", "--vscode-editor-selectionBackground": "#add6ff", "--vscode-editor-findMatchHighlightBackground": "rgba(234, 92, 0, 0.33)",
      "--vscode-charts-blue": "#1a85ff", "--vscode-charts-green": "#388a34", "--vscode-charts-yellow": "#bf8803", "--vscode-charts-orange": "#d18616",
      "--vscode-charts-purple": "#652d90", "--vscode-charts-foreground": "#616161", "--vscode-input-background": "#ffffff", "--vscode-input-foreground": "#3b3b3b",
      "--vscode-button-secondaryBackground": "#e5e5e5", "--vscode-button-secondaryForeground": "#3b3b3b", "--vscode-textLink-foreground": "#005fb8" };
    for (const [name, value] of Object.entries(light)) {
      document.documentElement.style.setProperty(name, value);
    }
    document.body.className = "vscode-light";
  });
}

/** A toolbar control as a person reaches it: on the row, or in the ⋯ menu when the row has no room. */
export async function toolbarControl(page, selector) {
  const control = page.locator(selector);
  if (await control.isHidden()) {
    await page.click("#overflow-button");
    await control.waitFor();
  }
  return control;
}

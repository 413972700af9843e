// fxlens in code-server in an untrusted workspace: nothing runs until the user trusts it. The
// interpreter comes from the fxlens.python setting here (no Python extension installed).
import { after, before, describe, test } from "node:test";
import { artifact, launchBrowser } from "../browser.mjs";
import { startCodeServer, testInterpreter } from "./codeServer.mjs";

const TRACE_TIMEOUT = Number(process.env.FXLENS_TRACE_TIMEOUT_MS ?? 180_000);
// any other wait: for the editor to show what it already has (generous for a busy 2-core CI machine)
const UI_TIMEOUT = 60_000;

async function openWorkbench(codeServer) {
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(UI_TIMEOUT);
  await page.goto(codeServer.url);
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "model.py" }).waitFor();
  return { browser, page };
}

async function openFile(page, name) {
  await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().click();
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor();
}

describe("an untrusted workspace", () => {
  let codeServer, browser, page;
  before(async () => {
    codeServer = await startCodeServer({ trusted: false, python: testInterpreter() });
    ({ browser, page } = await openWorkbench(codeServer));
  });
  after(async () => {
    await browser?.close();
    codeServer?.stop();
  });

  test("runs no code, and the status item says why", async () => {
    await openFile(page, "model.py");
    const status = page.locator(".statusbar-item", { hasText: "fxlens: restricted" });
    await status.waitFor();
    await status.hover();
    await page.locator(".monaco-hover, .statusbar-item-tooltip, [role=tooltip]", { hasText: "not trusted" }).first().waitFor();
    await page.screenshot({ path: artifact("code-server-restricted.png") });
  });

  test("traces once the user trusts it", async () => {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    await page.keyboard.type("Workspaces: Manage Workspace Trust");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Manage Workspace Trust" }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: /^Trust/ }).first().click();
    await openFile(page, "model.py");
    await page.locator(".codelens-decoration", { hasText: /fx \d+/ }).first().waitFor({ timeout: TRACE_TIMEOUT });
    await page.locator(".statusbar-item", { hasText: "fxlens: restricted" }).waitFor({ state: "detached" });
  });
});

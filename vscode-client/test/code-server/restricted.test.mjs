// fxlens in code-server when it must not or cannot run user code: an untrusted workspace (nothing
// runs until the user trusts it) and an interpreter without torch (one notification that says the fix).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { artifact, launchBrowser } from "../browser.mjs";
import { startCodeServer } from "./codeServer.mjs";

const TRACE_TIMEOUT = Number(process.env.FXLENS_TRACE_TIMEOUT_MS ?? 180_000);

async function openWorkbench(codeServer) {
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
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
    codeServer = await startCodeServer({ trusted: false });
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
    await page.locator(".codelens-decoration", { hasText: "nodes" }).first().waitFor({ timeout: TRACE_TIMEOUT });
    await page.locator(".statusbar-item", { hasText: "fxlens: restricted" }).waitFor({ state: "detached" });
  });
});

describe("an interpreter without torch", () => {
  let codeServer, browser, page;
  before(async () => {
    const venv = join(mkdtempSync(join(tmpdir(), "fxlens-no-torch-")), "venv");
    const python = process.env.FXLENS_TEST_PYTHON ?? "python3";
    execFileSync(python, ["-m", "venv", "--without-pip", venv]);
    codeServer = await startCodeServer({ python: join(venv, "bin", "python") });
    ({ browser, page } = await openWorkbench(codeServer));
  });
  after(async () => {
    await browser?.close();
    codeServer?.stop();
  });

  test("gets one notification naming the interpreter and the fix", async () => {
    await openFile(page, "model.py");
    const toast = page.locator(".notification-toast", { hasText: "torch is not installed" });
    await toast.first().waitFor();
    assert.match(await toast.first().textContent(), /-m pip install torch/);
    await page.locator(".statusbar-item", { hasText: "fxlens: unavailable" }).waitFor();
    assert.equal(await toast.count(), 1);
    await page.screenshot({ path: artifact("code-server-no-torch.png") });
  });
});

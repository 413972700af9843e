// Headless Debian Chromium driven by playwright-core (never a downloaded browser), shared by the
// graph-page test and the code-server test.
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const CLIENT_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ARTIFACTS = process.env.FXLENS_ARTIFACTS ?? join(CLIENT_DIR, "test-artifacts");
export const CHROMIUM = process.env.FXLENS_CHROMIUM ?? "/usr/bin/chromium";

const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
  "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"];

export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (bash .ci/setup-vscode.sh)`);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

export function artifact(name) {
  return join(ARTIFACTS, name);
}

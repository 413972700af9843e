// Starts a real VS Code (code-server 4.100.3) with the packaged fxlens.vsix installed, in a throwaway
// HOME, on a free loopback port. See scripts/install-code-server.sh for how it is installed.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { CLIENT_DIR } from "../browser.mjs";

export const CODE_SERVER =
  process.env.FXLENS_CODE_SERVER ?? join(homedir(), ".cache/fxlens/code-server-4.100.3/node_modules/.bin/code-server");
export const VSIX = process.env.FXLENS_VSIX ?? join(CLIENT_DIR, "fxlens.vsix");

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The interpreter with torch that the tests run under (python3 may be a shim that needs the real HOME). */
export function testInterpreter() {
  const python = process.env.FXLENS_TEST_PYTHON ?? "python3";
  return execFileSync(python, ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
}

/** The environment code-server runs in: a fresh HOME and XDG folders, so nothing of the machine's leaks in. */
function isolatedEnvironment(home) {
  return {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_CACHE_HOME: join(home, ".cache"),
  };
}

/** The fxlens log (its output channel), as the extension host wrote it. */
export function extensionLog(userData) {
  const logs = join(userData, "logs");
  const found = existsSync(logs) ? readdirSync(logs, { recursive: true }).filter((f) => /output_logging.*-fxlens\.log$/.test(f)) : [];
  return found.map((f) => readFileSync(join(logs, f), "utf8")).join("\n") || "(no fxlens log written)";
}

/** Packs the ms-python.python stand-in (test/fixtures/fake-python-extension) into `folder`. */
function packFakePythonExtension(folder) {
  const vsix = join(folder, "fake-python.vsix");
  execFileSync(join(CLIENT_DIR, "node_modules/.bin/vsce"),
    ["package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", vsix],
    { cwd: join(CLIENT_DIR, "test/fixtures/fake-python-extension"), stdio: "ignore" });
  return vsix;
}

/** The text editor showing `name` in `page`: the one in the editor group whose front tab it is. Not "the active
 * group's": on a loaded machine VS Code learned of an earlier click in a graph's webview only after the file had
 * been brought to the front, made the graph's group the active one, and a locator of the active group's editor
 * then found none for a minute. */
export function fileEditor(page, name) {
  const front = page.locator(".tabs-container .tab.active", { hasText: name });
  return page.locator(".editor-group-container", { has: front }).locator(".monaco-editor").first();
}

/**
 * Options: `trusted` false opens the folder in Restricted Mode (workspace trust on, never prompted);
 * `python` sets fxlens.python; `pythonExtension` installs the ms-python.python stand-in reporting
 * that interpreter as the workspace's.
 */
export async function startCodeServer({ trusted = true, python, pythonExtension } = {}) {
  for (const [what, path, fix] of [
    ["code-server", CODE_SERVER, "bash vscode-client/scripts/install-code-server.sh"],
    ["fxlens.vsix", VSIX, "cd vscode-client && npm run package"],
  ]) {
    if (!existsSync(path)) {
      throw new Error(`${what} not found at ${path}; run: ${fix} (or bash .ci/setup-vscode.sh)`);
    }
  }
  const root = mkdtempSync(join(tmpdir(), "fxlens-code-server-"));
  const home = join(root, "home");
  const userData = join(root, "user-data");
  const extensions = join(root, "extensions");
  const workspace = join(root, "workspace");
  mkdirSync(join(userData, "User"), { recursive: true });
  mkdirSync(home, { recursive: true });
  cpSync(join(CLIENT_DIR, "test/fixtures/workspace"), workspace, { recursive: true });
  // Quiet, predictable workbench: no welcome page, tips or extension recommendations over the editor.
  const fxlensSettings = python ? { "fxlens.python": python } : {};
  const pythonExtensionSettings = pythonExtension ? { "fakePython.interpreter": pythonExtension } : {};
  writeFileSync(join(userData, "User/settings.json"), JSON.stringify({
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "extensions.ignoreRecommendations": true,
    "telemetry.telemetryLevel": "off",
    "editor.hover.delay": 200,
    "window.restoreWindows": "none",
    // The extension host resolves PATH from a login shell of the throwaway HOME, where python3 is the
    // system's (no torch): the interpreter comes from the Python extension or fxlens.python, as for a
    // user whose torch lives in a venv.
    ...fxlensSettings,
    ...pythonExtensionSettings,
    "security.workspace.trust.enabled": !trusted,
    "security.workspace.trust.startupPrompt": "never",
    "security.workspace.trust.banner": "never",
  }, null, 1));
  const env = isolatedEnvironment(home);
  const dirs = ["--user-data-dir", userData, "--extensions-dir", extensions];
  const installs = [VSIX, ...(pythonExtension ? [packFakePythonExtension(root)] : [])].flatMap((v) => ["--install-extension", v]);
  execFileSync(CODE_SERVER, [...dirs, ...installs], { env, stdio: "inherit" });

  const port = await freePort();
  const trustFlags = trusted ? ["--disable-workspace-trust"] : [];
  const child = spawn(CODE_SERVER, [...dirs, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry",
    "--disable-update-check", ...trustFlags, workspace],
  { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const log = [];
  await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      log.push(chunk.toString());
      if (log.join("").includes("HTTP server listening")) {
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk) => log.push(chunk.toString()));
    child.once("exit", (code) => reject(new Error(`code-server exited (${code}) before listening:\n${log.join("")}`)));
  });
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM"); // the whole process group: code-server, its extension host, fxlens
    } catch {
      // already gone
    }
    // the throwaway HOME, user data and extensions (a few MB a run); the screenshots stay in test-artifacts
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
  // a test runner that is interrupted or killed must not leave code-server behind
  process.once("exit", stop);
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => {
      stop();
      process.exit(1);
    });
  }
  return { url: `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`, workspace, userData, log, stop };
}

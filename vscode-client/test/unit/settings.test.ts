import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_SETTINGS, readSettings, serverSettings } from "../../src/core/settings";

const from = (values: Record<string, unknown>) => readSettings((key) => values[key]);

test("missing settings take the defaults", () => {
  assert.deepEqual(from({}), DEFAULT_SETTINGS);
});

test("good values are kept", () => {
  const settings = from({ python: " /opt/venv/bin/python ", levels: ["fx"], timeoutSeconds: 5, execution: "full", inlayHints: true, memoryLimitMB: 512, diffLens: true, guessMemoryMB: 256, quickFixes: false });
  assert.deepEqual(settings, { python: "/opt/venv/bin/python", levels: ["fx"], timeoutSeconds: 5, execution: "full", inlayHints: true, memoryLimitMB: 512, diffLens: true, guessMemoryMB: 256, quickFixes: false });
});

test("bad values are replaced by defaults", () => {
  const settings = from({ levels: [], timeoutSeconds: -1, execution: "sometimes", inlayHints: "yes", memoryLimitMB: 0, diffLens: "on" });
  assert.deepEqual(settings, DEFAULT_SETTINGS);
});

test("an untrusted workspace never executes code, whatever the setting", () => {
  const settings = from({ execution: "full" });
  assert.equal(serverSettings(settings, "/usr/bin/python3", false).execution, "off");
  assert.equal(serverSettings(settings, "/usr/bin/python3", true).execution, "full");
});

test("the server is told the interpreter actually chosen", () => {
  assert.equal(serverSettings(from({}), "/env/bin/python", true).python, "/env/bin/python");
});

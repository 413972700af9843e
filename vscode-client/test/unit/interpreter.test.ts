import assert from "node:assert/strict";
import { test } from "node:test";
import { chooseInterpreter, judgeProbe } from "../../src/core/interpreterChoice";

test("the Python extension's interpreter wins over the setting", () => {
  assert.deepEqual(chooseInterpreter("/venv/bin/python", "/usr/bin/python3.11"), { path: "/venv/bin/python", source: "python-extension" });
});

test("without the Python extension the setting is used, then python3", () => {
  assert.deepEqual(chooseInterpreter(undefined, "/usr/bin/python3.11"), { path: "/usr/bin/python3.11", source: "setting" });
  assert.deepEqual(chooseInterpreter(undefined, "  "), { path: "python3", source: "default" });
});

test("an interpreter with torch is usable", () => {
  const result = judgeProbe("python3", '{"version": "3.11.9", "torch": "2.13.0"}\n', undefined);
  assert.deepEqual(result, { ok: true, version: "3.11.9", torch: "2.13.0" });
});

test("a missing torch names the interpreter and the fix", () => {
  const result = judgeProbe("/venv/bin/python", '{"version": "3.11.9", "torch": null}', undefined);
  assert.equal(result.ok, false);
  assert.match(result.problem!, /torch is not installed for '\/venv\/bin\/python'/);
  assert.match(result.fix!, /\/venv\/bin\/python -m pip install torch/);
});

test("a missing interpreter or an old Python is reported, not crashed on", () => {
  assert.match(judgeProbe("nopython", undefined, "spawn nopython ENOENT").problem!, /cannot run the Python interpreter 'nopython'/);
  assert.match(judgeProbe("python3", '{"version": "3.8.10", "torch": "2.0.0"}', undefined).problem!, /needs 3\.10/);
  assert.equal(judgeProbe("python3", "Python 2 says hello", undefined).ok, false);
});

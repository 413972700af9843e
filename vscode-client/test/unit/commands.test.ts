import assert from "node:assert/strict";
import { test } from "node:test";
import { classAtLine, showGraphArguments } from "../../src/core/graphTarget";
import { CLIENT_SHOW_GRAPH, redirectLenses } from "../../src/core/lensCommands";
import { parseServerStatus, statusView } from "../../src/core/statusText";

const source = [
  "import torch",            // 0
  "",                        // 1
  "# fxlens: A()(torch.randn(2, 3))",
  "class A(torch.nn.Module):", // 3
  "    def forward(self, x):",  // 4
  "        return x + 1",       // 5
  "",                        // 6
  "def helper():",           // 7
  "    pass",                // 8
  "class B(A):",             // 9
  "    pass",                // 10
];

test("the class around the cursor is the one drawn", () => {
  assert.equal(classAtLine(source, 5), "A");
  assert.equal(classAtLine(source, 3), "A");
  assert.equal(classAtLine(source, 10), "B");
});

test("outside any class the next class is drawn", () => {
  assert.equal(classAtLine(source, 0), "A");
  assert.equal(classAtLine(source, 8), "B");
  assert.equal(classAtLine(["x = 1"], 0), undefined);
});

test("showGraph arguments follow the server contract [uri, className?, level?]", () => {
  assert.deepEqual(showGraphArguments("file:///m.py"), ["file:///m.py"]);
  assert.deepEqual(showGraphArguments("file:///m.py", "A"), ["file:///m.py", "A"]);
  assert.deepEqual(showGraphArguments("file:///m.py", "A", "aten"), ["file:///m.py", "A", "aten"]);
  assert.deepEqual(showGraphArguments("file:///m.py", undefined, "aten"), ["file:///m.py", null, "aten"]);
});

test("the server's Show FX graph lens is redirected to the client's view command", () => {
  const lenses = [
    { command: { command: "fxlens.showGraph", title: "Show FX graph", arguments: ["file:///m.py", "A", "fx"] } },
    { command: { command: "", title: "fx: 3 nodes" } },
  ];
  const redirected = redirectLenses(lenses)!;
  assert.equal(redirected[0].command!.command, CLIENT_SHOW_GRAPH);
  assert.deepEqual(redirected[0].command!.arguments, ["file:///m.py", "A", "fx"]);
  assert.equal(redirected[1].command!.command, "");
});

test("the status item says why an untrusted workspace traces nothing", () => {
  const view = statusView({ server: "idle", message: "", trusted: false });
  assert.match(view.text, /restricted/);
  assert.match(view.tooltip, /not trusted.*runs none of its code/);
});

test("server states show as idle, tracing and error", () => {
  assert.match(statusView({ server: "tracing", message: "model.py", trusted: true }).text, /tracing/);
  const error = statusView({ server: "error", message: "worker died", trusted: true });
  assert.equal(error.isError, true);
  assert.match(error.tooltip, /worker died/);
  assert.match(statusView({ server: "idle", message: "", trusted: true, unavailable: "torch is not installed" }).tooltip, /torch is not installed/);
});

test("a malformed fxlens/status notification is read as idle", () => {
  assert.deepEqual(parseServerStatus({ state: "weird" }), { state: "idle", message: "" });
  assert.deepEqual(parseServerStatus({ state: "tracing", message: "m.py" }), { state: "tracing", message: "m.py" });
  assert.deepEqual(parseServerStatus(undefined), { state: "idle", message: "" });
});

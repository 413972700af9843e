import assert from "node:assert/strict";
import { test } from "node:test";
import type { GraphNode, GraphReport } from "../../src/core/report";
import { reportProblem } from "../../src/core/report";
import { buildHierarchy } from "../../webview/hierarchy";
import { elkGraph, groupLines, nodeLines, representative } from "../../webview/visible";
import { matchingNodes, nodesOfSpan, nodesOnLine } from "../../webview/search";

function node(id: string, op: string, target: string, line: number | null, scope = "", shape = "(4, 16)", fn = "Net.forward"): GraphNode {
  return { id, op, target, shape, dtype: "float32", label: `${id}\n${op}[${target}]\n${shape} f32`, line, col: 8, end_line: line, end_col: 20, scope, function: fn };
}

// two blocks of one class, each `x = x + self.fc(self.norm(x))`, the norm a module of its own
const nodes = [
  node("x", "placeholder", "x", null),
  node("blocks_0_norm", "call_module", "blocks.0.norm", 13, "blocks.0", "(4, 16)", "Block.forward"),
  node("blocks_0_fc", "call_module", "blocks.0.fc", 13, "blocks.0", "(4, 16)", "Block.forward"),
  node("add", "call_function", "operator.add", 13, "blocks.0", "(4, 16)", "Block.forward"),
  node("blocks_1_norm", "call_module", "blocks.1.norm", 13, "blocks.1", "(4, 16)", "Block.forward"),
  node("blocks_1_fc", "call_module", "blocks.1.fc", 13, "blocks.1", "(4, 16)", "Block.forward"),
  node("add_1", "call_function", "operator.add", 13, "blocks.1", "(4, 16)", "Block.forward"),
  node("head", "call_module", "head", 29, "head"),
  node("output", "output", "output", null, "", ""),
];
const chain = ["x", "blocks_0_norm", "blocks_0_fc", "add", "blocks_1_norm", "blocks_1_fc", "add_1", "head", "output"];
const edges = chain.slice(1).map((target, i) => ({ source: chain[i], target })).concat([{ source: "x", target: "add" }, { source: "add", target: "add_1" }]);
const report = {
  uri: "file:///m.py", class: "Net", level: "fx", levels: ["fx"], ok: true, printout: "", code: "", table: "", diagnostics: [],
  inputs: ["x"], graph: { nodes, edges }, scopes: { "blocks.0": { class: "Block", line: 28, col: 16, end_line: 28, end_col: 24 }, head: { class: "Linear", line: 29 } },
} as GraphReport;

test("nodes are grouped by the module instance that made them; a one-node module is no group", () => {
  const h = buildHierarchy(report);
  assert.deepEqual(h.root.groups.map((g) => g.id), ["blocks.0", "blocks.1"]);
  assert.deepEqual(h.root.nodes.map((n) => n.id), ["x", "head", "output"]);
  const block = h.groups.get("blocks.0")!;
  assert.equal(block.className, "Block");
  assert.equal(block.total, 3);
  assert.deepEqual(block.call, { line: 28, col: 16, end_line: 28, end_col: 24 });
  // blocks.1 has no tracer record: its class comes from the function its nodes ran in
  assert.equal(h.groups.get("blocks.1")!.className, "Block");
  assert.deepEqual([block.inputs, block.outputs], [["(4, 16)"], ["(4, 16)"]]);
  assert.deepEqual(block.repeat, { index: 0, count: 2 });
  assert.deepEqual(groupLines(block), ["blocks.0: Block · 1 of 2", "3 nodes · (4, 16) → (4, 16)"]);
});

test("a collapsed group stands for its nodes: edges go to its box, once", () => {
  const h = buildHierarchy(report);
  const { graph, items } = elkGraph(h, new Set());
  assert.deepEqual(graph.children!.map((c) => c.id), ["x", "g:blocks.0", "g:blocks.1", "head", "output"]);
  assert.equal(representative(h, new Set(), "blocks_0_fc"), "g:blocks.0");
  const pairs = graph.edges!.map((e) => `${e.sources[0]}>${e.targets[0]}`);
  assert.deepEqual(pairs.sort(), ["g:blocks.0>g:blocks.1", "g:blocks.1>head", "head>output", "x>g:blocks.0"]);
  assert.equal(items.size, 5);
  const opened = elkGraph(h, new Set(["blocks.0"]));
  const frame = opened.graph.children!.find((c) => c.id === "g:blocks.0")!;
  assert.deepEqual(frame.children!.map((c) => c.id), ["blocks_0_norm", "blocks_0_fc", "add"]);
  assert.ok(opened.graph.edges!.some((e) => e.sources[0] === "x" && e.targets[0] === "add"));
});

test("parameter inputs sit beside their only readers", () => {
  const weight = node("p_blocks_1_fc_weight", "placeholder", "p_blocks_1_fc_weight", null);
  const h = buildHierarchy({ ...report, graph: { nodes: [weight, ...nodes], edges: [...edges, { source: weight.id, target: "blocks_1_fc" }] } });
  assert.equal(h.groupOf.get(weight.id)!.id, "blocks.1");
  assert.equal(h.groupOf.get("x")!.id, "");
});

test("node boxes show name, opcode[target] and value, long lines cut", () => {
  assert.deepEqual(nodeLines(nodes[7]), ["head", "call_module[head]", "(4, 16) f32"]);
  const long = nodeLines(node("n", "call_function", "a".repeat(100), 1));
  assert.ok(long[1].length <= 48 && long[1].endsWith("…"));
});

test("search matches name, opcode, target and shapes as typed", () => {
  assert.deepEqual(matchingNodes(nodes, "head"), ["head"]);
  assert.deepEqual(matchingNodes(nodes, "call add"), ["add", "add_1"]);
  const shaped = [node("a", "call_function", "f", 1, "", "(B, T, 768)"), node("b", "call_function", "f", 1, "", "(B, T, 2304)")];
  assert.deepEqual(matchingNodes(shaped, "[B, T, 768]"), ["a"]);
  assert.deepEqual(matchingNodes(shaped, "(b,t"), ["a", "b"]);
  assert.deepEqual(matchingNodes(nodes, "  "), []);
});

test("the cursor's line and another level's span pick the nodes whose span covers them", () => {
  assert.deepEqual(nodesOnLine(nodes, 29), ["head"]);
  assert.deepEqual(nodesOnLine(nodes, 1), []);
  assert.deepEqual(nodesOnLine(nodes, null), []);
  assert.deepEqual(nodesOfSpan(nodes, { line: 29, col: 0, end_line: 29, end_col: 4 }), ["head"]);
});

test("unusable server answers are recognised", () => {
  assert.match(reportProblem(null)!, /no graph/);
  assert.match(reportProblem({ class: "A", level: "fx" })!, /no nodes/);
  assert.equal(reportProblem({ class: null, level: "fx", message: "no Module class 'B' in this file" }), "no Module class 'B' in this file");
  assert.equal(reportProblem({ class: "A", level: "fx", graph: { nodes: [], edges: [] } }), undefined);
});

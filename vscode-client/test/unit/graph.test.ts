import assert from "node:assert/strict";
import { test } from "node:test";
import type { GraphNode } from "../../src/core/report";
import { reportProblem } from "../../src/core/report";
import { layoutGraph, nodeLines } from "../../webview/layout";
import { matchingNodes, nodesOnLine } from "../../webview/search";

function node(id: string, op: string, target: string, line: number | null, shape = "(4, 16)"): GraphNode {
  return { id, op, target, shape, dtype: "float32", label: `${id}\n${op}[${target}]\n${shape} f32`, line, col: 8, end_line: line, end_col: 20, scope: "" };
}

const nodes = [node("x", "placeholder", "x", null), node("stem", "call_module", "stem", 26), node("add", "call_function", "<built-in function add>", 13), node("output", "output", "output", null, "")];
const edges = [{ source: "x", target: "stem" }, { source: "stem", target: "add" }, { source: "add", target: "output" }];

test("dagre places every node, top to bottom along the data flow", () => {
  const layout = layoutGraph(nodes, edges);
  assert.equal(layout.nodes.length, 4);
  assert.equal(layout.edges.length, 3);
  const y = Object.fromEntries(layout.nodes.map((n) => [n.node.id, n.y]));
  assert.ok(y.x < y.stem && y.stem < y.add && y.add < y.output);
  assert.ok(layout.edges.every((e) => e.points.length >= 2));
  assert.ok(layout.width > 0 && layout.height > 0);
});

test("edges to unknown nodes are not drawn", () => {
  assert.equal(layoutGraph(nodes, [...edges, { source: "stem", target: "ghost" }]).edges.length, 3);
});

test("node boxes show name, opcode[target] and value, long lines cut", () => {
  assert.deepEqual(nodeLines(nodes[1]), ["stem", "call_module[stem]", "(4, 16) f32"]);
  const long = nodeLines(node("n", "call_function", "a".repeat(100), 1));
  assert.ok(long[1].length <= 48 && long[1].endsWith("…"));
});

test("search matches name, opcode and target, every word", () => {
  assert.deepEqual(matchingNodes(nodes, "stem"), ["stem"]);
  assert.deepEqual(matchingNodes(nodes, "CALL"), ["stem", "add"]);
  assert.deepEqual(matchingNodes(nodes, "call add"), ["add"]);
  assert.deepEqual(matchingNodes(nodes, "  "), []);
});

test("the cursor's line picks the nodes whose span covers it", () => {
  assert.deepEqual(nodesOnLine(nodes, 26), ["stem"]);
  assert.deepEqual(nodesOnLine(nodes, 1), []);
  assert.deepEqual(nodesOnLine(nodes, null), []);
});

test("unusable server answers are recognised", () => {
  assert.match(reportProblem(null)!, /no graph/);
  assert.match(reportProblem({ class: "A", level: "fx" })!, /no nodes/);
  assert.equal(reportProblem({ class: null, level: "fx", message: "no Module class 'B' in this file" }), "no Module class 'B' in this file");
  assert.equal(reportProblem({ class: "A", level: "fx", graph: { nodes: [], edges: [] } }), undefined);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import type { GraphNode, GraphReport } from "../../src/core/report";
import { BACKWARD, buildHierarchy } from "../../webview/hierarchy";
import { layersCrossed, quickLayout } from "../../webview/quickLayout";
import { elkGraph, placeLayout } from "../../webview/visible";

function node(id: string, scope: string, phase: string | null, op = "call_function"): GraphNode {
  return { id, op, target: "aten.mm.default", shape: "(4, 16)", dtype: "float32", label: `${id}\n${op}\n(4, 16) f32`, line: 3, col: 0, end_line: 3, end_col: 9, scope, function: "Block.forward", phase };
}

// two blocks' forward, then their gradients in reverse, as a joint graph lists them
const nodes = [
  node("w", "", "forward", "placeholder"),
  node("f0a", "h.0", "forward"), node("f0b", "h.0", "forward"),
  node("f1a", "h.1", "forward"), node("f1b", "h.1", "forward"),
  node("g1a", "h.1", "backward"), node("g1b", "h.1", "backward"),
  node("g0a", "h.0", "backward"), node("g0b", "h.0", "backward"),
  node("loose", "", "backward"),
];
const chain = ["w", "f0a", "f0b", "f1a", "f1b", "g1a", "g1b", "g0a", "g0b", "loose"];
const edges = chain.slice(1).map((target, i) => ({ source: chain[i], target })).concat([{ source: "f0a", target: "g0b" }, { source: "w", target: "g0a" }]);
const report = {
  uri: "file:///m.py", class: "Net", level: "backward", levels: ["backward"], ok: true, printout: "", code: "", table: "", diagnostics: [],
  inputs: ["x"], graph: { nodes, edges }, scopes: { "h.0": { class: "Block", line: 9 }, "h.1": { class: "Block", line: 9 } },
} as GraphReport;

test("a backward level's gradients are drawn in a group of their own, by the module they differentiate", () => {
  const h = buildHierarchy(report);
  assert.deepEqual(h.root.groups.map((g) => g.id), ["h.0", "h.1", BACKWARD]);
  const backward = h.groups.get(BACKWARD)!;
  assert.equal(backward.className, "backward pass");
  assert.deepEqual(backward.groups.map((g) => g.id), [`${BACKWARD}.h.1`, `${BACKWARD}.h.0`]);
  assert.deepEqual(backward.nodes.map((n) => n.id), ["loose"]);
  // the gradient group answers a click with the line that called the module it differentiates
  assert.equal(h.groups.get(`${BACKWARD}.h.0`)!.call?.line, 9);
  // a weight read by the forward and by a gradient stays with the forward
  assert.equal(h.groupOf.get("w")!.id, "h.0");
});

test("the quick layout ends on any graph, cycles included: finite boxes in layers, edges straight", () => {
  const h = buildHierarchy(report);
  const { graph, items } = elkGraph(h, new Set(h.groups.keys()));
  // a cycle between two boxes (ELK reverses one edge; the quick layout drops it)
  graph.edges!.push({ id: "back", sources: ["g0b"], targets: ["g1a"] });
  const drawing = placeLayout(quickLayout(graph), items);
  assert.equal(drawing.items.length, items.size);
  for (const item of drawing.items) {
    assert.ok(Number.isFinite(item.x) && Number.isFinite(item.y) && item.width > 0 && item.height > 0, item.key);
  }
  const at = (key: string) => drawing.items.find((i) => i.key === key)!;
  // inside a group, a node sits below the one it reads; a group holds its nodes
  assert.ok(at("f0b").y > at("f0a").y);
  const group = at("g:h.0");
  assert.ok(at("f0a").x >= group.x && at("f0a").y + at("f0a").height <= group.y + group.height);
  // the gradients come after the forward
  assert.ok(at(`g:${BACKWARD}`).y > at("g:h.1").y + at("g:h.1").height - 1);
  for (const edge of drawing.edges) {
    assert.equal(edge.points.length, 2);
  }
});

test("the quick layout wraps a wide layer into rows", () => {
  const many = Array.from({ length: 300 }, (_, i) => node(`p${i}`, "", null, "placeholder"));
  const wide = { ...report, level: "aten", inputs: [], graph: { nodes: many, edges: [] } } as GraphReport;
  const h = buildHierarchy(wide);
  const { graph, items } = elkGraph(h, new Set());
  const drawing = placeLayout(quickLayout(graph), items);
  assert.ok(drawing.width <= 2600, `width ${drawing.width}`);
  assert.ok(new Set(drawing.items.map((i) => i.y)).size > 10);
});

test("the layers an edge passes are counted: a chain's edges pass none, a value read by every box far below passes many", () => {
  // a chain of 30 blocks; the first block's mask is read by every block, each block hands a value to the end
  const blocks = Array.from({ length: 30 }, (_, i) => ({ id: `b${i}`, width: 100, height: 30 }));
  const chainEdges = blocks.slice(1).map((b, i) => ({ id: `c${i}`, sources: [`b${i}`], targets: [b.id] }));
  const graph = { id: "root", children: [...blocks, { id: "end", width: 100, height: 30 }], edges: [...chainEdges, { id: "last", sources: ["b29"], targets: ["end"] }] };
  assert.equal(layersCrossed(graph), 0);
  // b0 -> b_k passes k - 1 rows; b_k -> end passes 29 - k
  const fan = blocks.slice(2).map((b) => ({ id: `m${b.id}`, sources: ["b0"], targets: [b.id] }));
  const toEnd = blocks.slice(0, 28).map((b) => ({ id: `s${b.id}`, sources: [b.id], targets: ["end"] }));
  const crossed = layersCrossed({ ...graph, edges: [...graph.edges, ...fan, ...toEnd] });
  const expected = [...Array(28).keys()].reduce((sum, k) => sum + (k + 1) + (29 - k), 0);
  assert.equal(crossed, expected);
  // inside a group, edges are counted between its children; one into the group is counted at the top
  const nested = { id: "root", children: [{ id: "g", children: blocks.slice(0, 4), width: 0, height: 0 }, { id: "x", width: 10, height: 10 }], edges: [...chainEdges.slice(0, 3), { id: "in", sources: ["x"], targets: ["b3"] }, { id: "skip", sources: ["b0"], targets: ["b3"] }] };
  assert.equal(layersCrossed(nested), 2);
});

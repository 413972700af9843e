// Lays out the graph as a top-to-bottom DAG with dagre. Pure (no DOM), so node tests cover it.
import { graphlib, layout } from "@dagrejs/dagre";
import type { GraphEdge, GraphNode } from "../src/core/report";

// Node boxes are sized from their text: a monospace font of FONT_SIZE px is CHAR_WIDTH px a character.
export const FONT_SIZE = 12;
export const CHAR_WIDTH = 7.3;
export const LINE_HEIGHT = 16;
const PADDING_X = 10;
const PADDING_Y = 8;
const MAX_LINE_CHARS = 48;

export interface PlacedNode {
  node: GraphNode;
  lines: string[];
  x: number; // centre
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  source: string;
  target: string;
  points: { x: number; y: number }[];
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
}

/** The lines drawn in a node's box: name, op[target] and the value, each cut to a readable width. */
export function nodeLines(node: GraphNode): string[] {
  const lines = node.label ? node.label.split("\n") : [node.id, `${node.op}[${node.target}]`, node.shape];
  return lines.filter((line) => line !== "").map((line) => (line.length > MAX_LINE_CHARS ? line.slice(0, MAX_LINE_CHARS - 1) + "…" : line));
}

export function layoutGraph(nodes: GraphNode[], edges: GraphEdge[]): GraphLayout {
  const graph = new graphlib.Graph<object, { width: number; height: number; x?: number; y?: number }, { points?: { x: number; y: number }[] }>();
  graph.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, marginx: 16, marginy: 16 });
  graph.setDefaultEdgeLabel(() => ({}));
  const lines = new Map<string, string[]>();
  for (const node of nodes) {
    const text = nodeLines(node);
    lines.set(node.id, text);
    const longest = Math.max(...text.map((line) => line.length), 4);
    graph.setNode(node.id, { width: longest * CHAR_WIDTH + 2 * PADDING_X, height: text.length * LINE_HEIGHT + 2 * PADDING_Y });
  }
  const known = new Set(nodes.map((n) => n.id));
  const drawnEdges = edges.filter((e) => known.has(e.source) && known.has(e.target));
  for (const edge of drawnEdges) {
    graph.setEdge(edge.source, edge.target);
  }
  layout(graph);
  const label = graph.graph() as { width?: number; height?: number };
  return {
    width: label.width ?? 0,
    height: label.height ?? 0,
    nodes: nodes.map((node) => {
      const placed = graph.node(node.id);
      return { node, lines: lines.get(node.id)!, x: placed.x ?? 0, y: placed.y ?? 0, width: placed.width, height: placed.height };
    }),
    edges: drawnEdges.map((edge) => ({ ...edge, points: graph.edge(edge.source, edge.target)?.points ?? [] })),
  };
}

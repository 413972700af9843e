// Which nodes a search query, the editor's cursor line or another level's selection picks out. Pure.
import type { GraphNode, ReportSpan } from "../src/core/report";

// a shape as a person types it, `[B, T, 768]` or `(B, T`: compared without spaces, brackets as parens
const SHAPE = /[[(][^\])]*[\])]?/g;
const shapeKey = (text: string) => text.replace(/\s+/g, "").replace(/\[/g, "(").replace(/\]/g, ")").toLowerCase();

/** Ids of nodes whose name, opcode, target or shape contains every word of `query` (case-insensitive). */
export function matchingNodes(nodes: GraphNode[], query: string): string[] {
  const shapes = (query.match(SHAPE) ?? []).map(shapeKey);
  const words = query.replace(SHAPE, " ").toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0 && shapes.length === 0) {
    return [];
  }
  return nodes
    .filter((node) => {
      const haystack = `${node.id} ${node.op} ${node.target} ${node.shape} ${node.dtype ?? ""}`.toLowerCase();
      const shape = shapeKey(node.shape ?? "");
      return words.every((word) => haystack.includes(word)) && shapes.every((s) => shape.includes(s));
    })
    .map((node) => node.id);
}

/** Ids of nodes whose source span covers the 1-based report `line`. */
export function nodesOnLine(nodes: GraphNode[], line: number | null): string[] {
  if (line === null) {
    return [];
  }
  return nodes
    .filter((node) => node.line !== null && node.line <= line && line <= (node.end_line ?? node.line))
    .map((node) => node.id);
}

/** Ids of nodes whose span overlaps `span` (the same source, traced at another level). */
export function nodesOfSpan(nodes: GraphNode[], span: ReportSpan | undefined): string[] {
  if (!span || span.line === null) {
    return [];
  }
  const first = span.line;
  const last = span.end_line ?? span.line;
  return nodes
    .filter((node) => node.line !== null && node.line <= last && first <= (node.end_line ?? node.line))
    .map((node) => node.id);
}

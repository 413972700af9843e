// Which nodes a search query or the editor's cursor line picks out. Pure.
import type { GraphNode } from "../src/core/report";

/** Ids of nodes whose name, opcode, target or shape contains every word of `query` (case-insensitive). */
export function matchingNodes(nodes: GraphNode[], query: string): string[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) {
    return [];
  }
  return nodes
    .filter((node) => {
      const haystack = `${node.id} ${node.op} ${node.target} ${node.shape} ${node.dtype ?? ""}`.toLowerCase();
      return words.every((word) => haystack.includes(word));
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

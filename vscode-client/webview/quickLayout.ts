// The drawing that always ends: layers by longest path, boxes in model order, edges drawn straight
// (no routing). It answers in the same shape as ELK (positions relative to the parent, edge sections
// in root coordinates), so placeLayout draws either. Linear in boxes and edges: milliseconds where
// ELK's layered algorithm with routing ran for minutes (GPT-2's backward, thousands of boxes).
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api";

const NODE_GAP = 20;
const LAYER_GAP = 28;
// a layer wider than this wraps onto further rows (436 parameters, or twelve blocks' gradients side by
// side, would make one row tens of thousands of pixels wide)
const MAX_ROW_WIDTH = 2400;
const PAD = { top: 12, left: 12, bottom: 12, right: 12 };

interface Padding {
  top: number;
  left: number;
  bottom: number;
  right: number;
}

function padding(node: ElkNode): Padding {
  const text = String(node.layoutOptions?.["elk.padding"] ?? "");
  const value = (side: keyof Padding) => Number(new RegExp(`${side}=(\\d+(?:\\.\\d+)?)`).exec(text)?.[1] ?? PAD[side]);
  return { top: value("top"), left: value("left"), bottom: value("bottom"), right: value("right") };
}

function minimumSize(node: ElkNode): { width: number; height: number } {
  const match = /\(([\d.]+),\s*([\d.]+)\)/.exec(String(node.layoutOptions?.["elk.nodeSize.minimum"] ?? ""));
  return match ? { width: Number(match[1]), height: Number(match[2]) } : { width: 0, height: 0 };
}

/** Each child's layer: the longest path to it, the edges that close a cycle left out. */
function layers(children: ElkNode[], edges: [string, string][]): number[] {
  const index = new Map(children.map((c, i) => [c.id, i]));
  const out: number[][] = children.map(() => []);
  for (const [a, b] of edges) {
    out[index.get(a)!].push(index.get(b)!);
  }
  // a depth-first walk in model order gives a topological order; an edge back to the walk's own path
  // closes a cycle and is dropped
  const state = new Uint8Array(children.length); // 0 new, 1 on the path, 2 done
  const order: number[] = [];
  const kept: number[][] = children.map(() => []);
  for (let start = 0; start < children.length; start++) {
    if (state[start]) {
      continue;
    }
    const stack: [number, number][] = [[start, 0]];
    state[start] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [at, next] = top;
      if (next < out[at].length) {
        top[1]++;
        const to = out[at][next];
        if (state[to] === 0) {
          kept[at].push(to);
          state[to] = 1;
          stack.push([to, 0]);
        } else if (state[to] === 2) {
          kept[at].push(to);
        }
      } else {
        state[at] = 2;
        order.push(at);
        stack.pop();
      }
    }
  }
  const layer = new Array<number>(children.length).fill(0);
  for (let k = order.length - 1; k >= 0; k--) {
    const at = order[k];
    for (const to of kept[at]) {
      layer[to] = Math.max(layer[to], layer[at] + 1);
    }
  }
  return layer;
}

/** A layer cut into rows no wider than MAX_ROW_WIDTH (a single wider box has a row of its own). */
function wrap(row: ElkNode[]): ElkNode[][] {
  const rows: ElkNode[][] = [[]];
  let width = 0;
  for (const child of row) {
    const w = (child.width ?? 0) + NODE_GAP;
    if (width + w > MAX_ROW_WIDTH && rows[rows.length - 1].length) {
      rows.push([]);
      width = 0;
    }
    rows[rows.length - 1].push(child);
    width += w;
  }
  return rows;
}

/** Each edge of a compound graph lifted to the two siblings under the innermost container holding both ends, by container id. */
function siblingEdges(graph: ElkNode): Map<string, [string, string][]> {
  const parentOf = new Map<string, ElkNode>();
  const visit = (node: ElkNode): void => {
    for (const child of node.children ?? []) {
      parentOf.set(child.id, node);
      visit(child);
    }
  };
  visit(graph);
  const depthOf = (id: string) => {
    let depth = 0;
    for (let p = parentOf.get(id); p; p = parentOf.get(p.id)) {
      depth++;
    }
    return depth;
  };
  const local = new Map<string, [string, string][]>();
  for (const edge of (graph.edges ?? []) as ElkExtendedEdge[]) {
    let a = edge.sources[0];
    let b = edge.targets[0];
    let da = depthOf(a);
    let db = depthOf(b);
    while (da > db) {
      a = parentOf.get(a)!.id;
      da--;
    }
    while (db > da) {
      b = parentOf.get(b)!.id;
      db--;
    }
    while (a !== b && parentOf.get(a) !== parentOf.get(b)) {
      a = parentOf.get(a)!.id;
      b = parentOf.get(b)!.id;
    }
    if (a !== b) {
      const container = parentOf.get(a)!.id;
      (local.get(container) ?? local.set(container, []).get(container)!).push([a, b]);
    }
  }
  return local;
}

/**
 * How many layers the edges of `graph` cross between their ends, summed: the dummy nodes a layered
 * layout routes them through. ELK's time follows it more than the boxes: the 70B-shaped model's
 * collapsed backward is 89 boxes, but 336 edges from each of 80 layers into the gradients and the
 * forward's output, and a mask read by every layer, cross 10,000 layers in all (GPT-2 48's: 4,000).
 */
export function layersCrossed(graph: ElkNode): number {
  const local = siblingEdges(graph);
  let crossed = 0;
  const visit = (node: ElkNode): void => {
    const children = node.children ?? [];
    const edges = local.get(node.id) ?? [];
    if (edges.length) {
      const layer = layers(children, edges);
      const index = new Map(children.map((c, i) => [c.id, i]));
      for (const [a, b] of edges) {
        crossed += Math.max(0, Math.abs(layer[index.get(b)!] - layer[index.get(a)!]) - 1);
      }
    }
    children.forEach(visit);
  };
  visit(graph);
  return crossed;
}

/** Lays out `graph` (ELK's input, compound) without ELK; the result is a copy with positions and sizes. */
export function quickLayout(graph: ElkNode): ElkNode {
  const parentOf = new Map<string, ElkNode>();
  const copies = new Map<string, ElkNode>();
  const copy = (node: ElkNode): ElkNode => {
    const out: ElkNode = { id: node.id, width: node.width, height: node.height, layoutOptions: node.layoutOptions };
    copies.set(node.id, out);
    out.children = (node.children ?? []).map((child) => {
      const c = copy(child);
      parentOf.set(c.id, out);
      return c;
    });
    return out;
  };
  const root = copy(graph);
  // each edge, lifted to the two siblings under the innermost container holding both ends
  const local = new Map<ElkNode, [string, string][]>([...siblingEdges(graph)].map(([id, edges]) => [copies.get(id)!, edges]));
  const place = (node: ElkNode): void => {
    const children = node.children ?? [];
    if (children.length === 0) {
      return;
    }
    children.forEach(place);
    const layer = layers(children, local.get(node) ?? []);
    const rows: ElkNode[][] = [];
    children.forEach((child, i) => (rows[layer[i]] ??= []).push(child));
    const wrapped = rows.filter(Boolean).flatMap(wrap);
    const rowWidth = (row: ElkNode[]) => row.reduce((sum, c) => sum + (c.width ?? 0), 0) + NODE_GAP * (row.length - 1);
    const inner = Math.max(...wrapped.map(rowWidth));
    const pad = padding(node);
    let y = pad.top;
    for (const row of wrapped) {
      let x = pad.left + (inner - rowWidth(row)) / 2;
      const height = Math.max(...row.map((c) => c.height ?? 0));
      for (const child of row) {
        child.x = x;
        child.y = y;
        x += (child.width ?? 0) + NODE_GAP;
      }
      y += height + LAYER_GAP;
    }
    const minimum = minimumSize(node);
    node.width = Math.max(minimum.width, inner + pad.left + pad.right);
    node.height = Math.max(minimum.height, y - LAYER_GAP + pad.bottom);
  };
  place(root);
  root.x = 0;
  root.y = 0;
  // edges: straight, from the bottom of the source to the top of the target, in root coordinates
  const absolute = (id: string) => {
    let x = 0;
    let y = 0;
    for (let n: ElkNode | undefined = copies.get(id); n; n = parentOf.get(n.id)) {
      x += n.x ?? 0;
      y += n.y ?? 0;
    }
    return { x, y };
  };
  root.edges = ((graph.edges ?? []) as ElkExtendedEdge[]).map((edge) => {
    const [s, t] = [copies.get(edge.sources[0])!, copies.get(edge.targets[0])!];
    const [from, to] = [absolute(s.id), absolute(t.id)];
    const startPoint = { x: from.x + (s.width ?? 0) / 2, y: from.y + (s.height ?? 0) };
    const endPoint = { x: to.x + (t.width ?? 0) / 2, y: to.y };
    return { id: edge.id, sources: edge.sources, targets: edge.targets, sections: [{ id: `${edge.id}s`, startPoint, endPoint }] };
  });
  return root;
}

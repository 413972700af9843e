// What is drawn: the hierarchy cut at the collapsed groups (a collapsed group is one box standing for
// every node inside it), as an ELK compound graph, and ELK's answer turned into absolute boxes and
// edge routes. Pure (no DOM), so node tests cover it.
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api";
import type { GraphNode } from "../src/core/report";
import { Group, Hierarchy, shortName } from "./hierarchy";

// Boxes are sized from their text: a monospace font of FONT_SIZE px is CHAR_WIDTH px a character.
export const FONT_SIZE = 12;
export const CHAR_WIDTH = 7.3;
export const LINE_HEIGHT = 16;
export const PADDING_X = 10;
export const PADDING_Y = 8;
const MAX_LINE_CHARS = 48;

export interface Item {
  key: string; // a node's id, or "g:" + a group's instance path
  node?: GraphNode;
  group?: Group;
  expanded: boolean;
  lines: string[];
  x: number; // top-left corner, absolute
  y: number;
  width: number;
  height: number;
}

export interface DrawnEdge {
  source: string;
  target: string;
  points: { x: number; y: number }[];
}

export interface Drawing {
  width: number;
  height: number;
  items: Item[]; // expanded groups first, outer before inner, then boxes
  edges: DrawnEdge[];
}

export const groupKey = (group: Group) => `g:${group.id}`;

const cut = (line: string) => (line.length > MAX_LINE_CHARS ? line.slice(0, MAX_LINE_CHARS - 1) + "…" : line);

/** The lines drawn in a node's box: name, op[target] and the value. */
export function nodeLines(node: GraphNode): string[] {
  const lines = node.label ? node.label.split("\n") : [node.id, `${node.op}[${node.target}]`, node.shape];
  return lines.filter((line) => line !== "").map(cut);
}

/** A group's header: its name and class, then what a reader needs to skip it: size and shapes. */
export function groupLines(group: Group): string[] {
  const repeat = group.repeat ? ` · ${group.repeat.index + 1} of ${group.repeat.count}` : "";
  const flow = `${group.inputs.slice(0, 2).join(", ") || "()"} → ${group.outputs.slice(0, 2).join(", ") || "()"}`;
  return [cut(`${shortName(group)}: ${group.className}${repeat}`), cut(`${group.total} nodes · ${flow}`)];
}

function boxSize(lines: string[]): { width: number; height: number } {
  const longest = Math.max(...lines.map((line) => line.length), 4);
  return { width: Math.ceil(longest * CHAR_WIDTH + 2 * PADDING_X + 14), height: lines.length * LINE_HEIGHT + 2 * PADDING_Y };
}

/** The key of what stands for `nodeId` in the drawing: the node, or its outermost collapsed group. */
export function representative(hierarchy: Hierarchy, expanded: ReadonlySet<string>, nodeId: string): string {
  let key = nodeId;
  for (let g = hierarchy.groupOf.get(nodeId); g && g.parent; g = g.parent) {
    if (!expanded.has(g.id)) {
      key = groupKey(g);
    }
  }
  return key;
}

const LAYOUT_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.direction": "DOWN",
  "elk.hierarchyHandling": "INCLUDE_CHILDREN",
  "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
  "elk.edgeRouting": "ORTHOGONAL",
  "elk.spacing.nodeNode": "20",
  "elk.layered.spacing.nodeNodeBetweenLayers": "28",
  "elk.spacing.edgeNode": "12",
  "org.eclipse.elk.json.edgeCoords": "ROOT",
};

/** The ELK graph of what is open, and the items it places (looked up by key). */
export function elkGraph(hierarchy: Hierarchy, expanded: ReadonlySet<string>): { graph: ElkNode; items: Map<string, Item> } {
  const items = new Map<string, Item>();
  const place = (key: string, lines: string[], extra: Partial<Item>): ElkNode => {
    const size = boxSize(lines);
    items.set(key, { key, lines, expanded: false, x: 0, y: 0, ...size, ...extra });
    return { id: key, ...size };
  };
  const children = (group: Group): ElkNode[] => {
    // the graph order: a group sits where its first node is
    const entries: { order: number; elk: ElkNode }[] = [];
    for (const node of group.nodes) {
      entries.push({ order: order.get(node.id)!, elk: place(node.id, nodeLines(node), { node }) });
    }
    for (const child of group.groups) {
      const lines = groupLines(child);
      const key = groupKey(child);
      let elk: ElkNode;
      if (expanded.has(child.id)) {
        const header = boxSize(lines);
        items.set(key, { key, lines, group: child, expanded: true, x: 0, y: 0, ...header });
        elk = {
          id: key,
          children: children(child),
          layoutOptions: {
            "elk.padding": `[top=${header.height + 6},left=12,bottom=12,right=12]`,
            "elk.nodeSize.constraints": "MINIMUM_SIZE",
            "elk.nodeSize.minimum": `(${header.width + 12}, ${header.height + 20})`,
          },
        };
      } else {
        elk = place(key, lines, { group: child });
      }
      entries.push({ order: firstOrder(child), elk });
    }
    return entries.sort((a, b) => a.order - b.order).map((e) => e.elk);
  };
  const order = new Map<string, number>();
  [...hierarchy.nodes.keys()].forEach((id, index) => order.set(id, index));
  const firstCache = new Map<Group, number>();
  const firstOrder = (group: Group): number => {
    const known = firstCache.get(group);
    if (known !== undefined) {
      return known;
    }
    // a group sits where its first computing node is: the inputs a backward graph lists first (every
    // saved value, every weight) would put the last block's gradients before the first's
    const computing = group.nodes.filter((n) => n.op !== "placeholder");
    const first = Math.min(...(computing.length ? computing : group.nodes).map((n) => order.get(n.id)!), ...group.groups.map(firstOrder));
    firstCache.set(group, first);
    return first;
  };
  const graphChildren = children(hierarchy.root);
  const edges: ElkExtendedEdge[] = [];
  const seen = new Set<string>();
  // what stands for a node depends only on its group: found once per group, not once per edge (the
  // 70B-shaped backward has 29,000); null when every group around it is open (the node stands for itself)
  const around = new Map<Group, string | null>();
  const drawnAs = (id: string): string => {
    const group = hierarchy.groupOf.get(id);
    if (!group) {
      return id;
    }
    let key = around.get(group);
    if (key === undefined) {
      key = null;
      for (let g: Group | undefined = group; g && g.parent; g = g.parent) {
        key = expanded.has(g.id) ? key : groupKey(g);
      }
      around.set(group, key);
    }
    return key ?? id;
  };
  for (const [source, users] of hierarchy.usersOf) {
    const from = drawnAs(source);
    for (const user of users) {
      const to = drawnAs(user);
      const id = `${from}\u0000${to}`;
      if (from !== to && !seen.has(id)) {
        seen.add(id);
        edges.push({ id: `e${edges.length}`, sources: [from], targets: [to] });
      }
    }
  }
  return { graph: { id: "root", layoutOptions: LAYOUT_OPTIONS, children: graphChildren, edges }, items };
}

/** ELK's answer as absolute boxes (groups outer first) and edge routes. */
export function placeLayout(result: ElkNode, items: Map<string, Item>): Drawing {
  const groups: Item[] = [];
  const boxes: Item[] = [];
  const visit = (elk: ElkNode, dx: number, dy: number) => {
    for (const child of elk.children ?? []) {
      const item = items.get(child.id)!;
      const x = dx + (child.x ?? 0);
      const y = dy + (child.y ?? 0);
      Object.assign(item, { x, y, width: child.width ?? item.width, height: child.height ?? item.height });
      (item.expanded ? groups : boxes).push(item);
      visit(child, x, y);
    }
  };
  visit(result, 0, 0);
  const edges: DrawnEdge[] = (result.edges ?? []).map((edge) => {
    const section = (edge as ElkExtendedEdge).sections?.[0];
    const points = section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint] : [];
    return { source: (edge as ElkExtendedEdge).sources[0], target: (edge as ElkExtendedEdge).targets[0], points };
  });
  return { width: result.width ?? 0, height: result.height ?? 0, items: [...groups, ...boxes], edges };
}

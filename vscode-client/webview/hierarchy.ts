// The module hierarchy of a graph: one group per submodule instance that produced nodes (the nodes'
// `scope`, e.g. `transformer.h.3.attn`), nested by instance path. Pure (no DOM), so node tests cover it.
import type { GraphNode, GraphReport, ReportSpan, ScopeInfo } from "../src/core/report";

export interface Group {
  id: string; // the instance path; "" is the class itself
  parent: Group | undefined;
  groups: Group[]; // child groups, in the order their first node appears in the graph
  nodes: GraphNode[]; // the nodes drawn directly in this group
  total: number; // nodes in this group and every group inside it
  className: string;
  call: ReportSpan | undefined; // the line that called the submodule
  inputs: string[]; // shapes of the values flowing in from outside, once each
  outputs: string[]; // shapes of the values used outside
  // among its siblings, the instances of one class with the same node count (`h.0 … h.11`)
  repeat: { index: number; count: number } | undefined;
  depth: number;
}

export interface Hierarchy {
  root: Group;
  groups: Map<string, Group>;
  groupOf: Map<string, Group>; // node id -> the group it is drawn in
  nodes: Map<string, GraphNode>;
  inputsOf: Map<string, string[]>; // node id -> ids of the nodes it reads
  usersOf: Map<string, string[]>;
}

function parentScope(scope: string, known: Set<string>): string {
  for (let cut = scope.lastIndexOf("."); cut > 0; cut = scope.lastIndexOf(".", cut - 1)) {
    const prefix = scope.slice(0, cut);
    if (known.has(prefix)) {
      return prefix;
    }
  }
  return "";
}

/** The class an instance is of: the tracer's record, else the `Class.forward` most of its nodes came from. */
function className(scope: string, info: ScopeInfo | undefined, nodes: GraphNode[]): string {
  if (info?.class) {
    return info.class;
  }
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const owner = /^(\w+)\.forward$/.exec(node.function ?? "")?.[1];
    owner && counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  const best = [...counts].sort((a, b) => b[1] - a[1])[0];
  return best ? best[0] : scope ? scope.split(".").pop()! : "";
}

// the backward level's gradient nodes are drawn in a group of their own, nested by the module they
// differentiate: a block's forward and backward in one box would tie every block to both neighbours
export const BACKWARD = "∇";

/** The group path a node is drawn under: its scope, or for a gradient node its scope inside the backward group. */
function drawnScope(node: GraphNode): string {
  const scope = node.scope ?? "";
  return node.phase === "backward" ? (scope ? `${BACKWARD}.${scope}` : BACKWARD) : scope;
}

/** The module instance a group path stands for (`∇.transformer.h.0` differentiates `transformer.h.0`). */
export function instancePath(id: string): string {
  return id === BACKWARD ? "" : id.startsWith(BACKWARD + ".") ? id.slice(BACKWARD.length + 1) : id;
}

function ancestors(group: Group): Group[] {
  const chain: Group[] = [];
  for (let g: Group | undefined = group; g; g = g.parent) {
    chain.push(g);
  }
  return chain;
}

/** The innermost group holding both: the deeper one walks up to the other's depth, then both together. */
function commonOfTwo(a: Group, b: Group): Group {
  while (a.depth > b.depth) {
    a = a.parent!;
  }
  while (b.depth > a.depth) {
    b = b.parent!;
  }
  while (a !== b) {
    a = a.parent!;
    b = b.parent!;
  }
  return a;
}

/** The innermost group holding every one of `groups`. */
export function commonGroup(groups: Group[]): Group | undefined {
  // (by depth, not by comparing ancestor lists: the backward level asks this for each of 30,000 edges)
  return groups.length ? groups.reduce(commonOfTwo) : undefined;
}

export function contains(outer: Group, inner: Group): boolean {
  for (let g: Group | undefined = inner; g; g = g.parent) {
    if (g === outer) {
      return true;
    }
  }
  return false;
}

export function buildHierarchy(report: GraphReport): Hierarchy {
  const { nodes, edges } = report.graph;
  const scopes = report.scopes ?? {};
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const inputsOf = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  const usersOf = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const { source, target } of edges) {
    if (byId.has(source) && byId.has(target)) {
      inputsOf.get(target)!.push(source);
      usersOf.get(source)!.push(target);
    }
  }
  // groups: every scope with nodes, and every called module that holds such a scope (a Block whose
  // forward only calls its children still frames them)
  // (a pass preview's groups are those of the graph after the pass: its removed nodes are drawn in them
  // but make none, or a fused node and the two it replaces would box a leaf module)
  const perScope = new Map<string, number>();
  for (const node of nodes) {
    const scope = drawnScope(node);
    scope && node.change !== "removed" && perScope.set(scope, (perScope.get(scope) ?? 0) + 1);
  }
  const holders = new Set<string>();
  for (const scope of perScope.keys()) {
    for (let cut = scope.indexOf("."); cut > 0; cut = scope.indexOf(".", cut + 1)) {
      holders.add(scope.slice(0, cut));
    }
  }
  // a box around a single node (a leaf module's own call) says nothing the node does not: no group
  const known = new Set([...perScope].filter(([scope, count]) => count > 1 || holders.has(scope)).map(([scope]) => scope));
  for (const called of Object.keys(scopes)) {
    [called, `${BACKWARD}.${called}`].filter((id) => holders.has(id)).forEach((id) => known.add(id));
  }
  holders.has(BACKWARD) && known.add(BACKWARD);
  const root: Group = { id: "", parent: undefined, groups: [], nodes: [], total: 0, className: report.class, call: undefined, inputs: [], outputs: [], repeat: undefined, depth: 0 };
  const groups = new Map<string, Group>([["", root]]);
  const groupFor = (scope: string): Group => {
    const found = groups.get(scope);
    if (found) {
      return found;
    }
    const parent = groupFor(parentScope(scope, known));
    const info = scopes[instancePath(scope)];
    const call = info?.line !== undefined ? { line: info.line, col: info.col ?? null, end_line: info.end_line ?? null, end_col: info.end_col ?? null } : undefined;
    const group: Group = { id: scope, parent, groups: [], nodes: [], total: 0, className: "", call, inputs: [], outputs: [], repeat: undefined, depth: parent.depth + 1 };
    parent.groups.push(group);
    groups.set(scope, group);
    return group;
  };
  const groupOf = new Map<string, Group>();
  for (const node of nodes) {
    const scope = drawnScope(node);
    groupOf.set(node.id, groupFor(known.has(scope) ? scope : parentScope(scope, known)));
  }
  // a parameter (a get_attr, or the placeholder export lifts it to) is drawn beside its readers: in the
  // innermost group that holds all of them, not as one of 800 weights at the top; the forward's own
  // inputs stay where the call starts
  const forwardInputs = new Set(report.inputs ?? []);
  for (const node of nodes) {
    const parameter = node.op === "get_attr" || (node.op === "placeholder" && report.inputs !== undefined && !forwardInputs.has(node.id));
    if (!parameter) {
      continue;
    }
    const users = usersOf.get(node.id)!;
    // a weight read by the forward and by its gradient stays with the forward (the partitioned
    // forward's output, which hands it to the backward, is no reader)
    const forwardUsers = users.filter((u) => byId.get(u)!.phase !== "backward" && byId.get(u)!.op !== "output");
    const readers = forwardUsers.length ? forwardUsers : users;
    if (readers.length > 0) {
      const common = commonGroup(readers.map((u) => groupOf.get(u)!));
      common && groupOf.set(node.id, common);
    }
  }
  for (const node of nodes) {
    const group = groupOf.get(node.id)!;
    group.nodes.push(node);
    for (let g: Group | undefined = group; g; g = g.parent) {
      g.total++;
    }
  }
  for (const group of groups.values()) {
    group.className = group.id === BACKWARD ? "backward pass" : className(instancePath(group.id), scopes[instancePath(group.id)], group.nodes);
  }
  boundaryShapes(nodes, groupOf, usersOf);
  markRepeats(root);
  return { root, groups, groupOf, nodes: byId, inputsOf, usersOf };
}

/** Each group's input and output shapes: the values crossing its border. */
function boundaryShapes(nodes: GraphNode[], groupOf: Map<string, Group>, usersOf: Map<string, string[]>): void {
  const seenIn = new Map<Group, Set<string>>();
  const seenOut = new Map<Group, Set<string>>();
  const add = (seen: Map<Group, Set<string>>, list: (g: Group) => string[], group: Group, node: GraphNode) => {
    const ids = seen.get(group) ?? seen.set(group, new Set()).get(group)!;
    if (!ids.has(node.id)) {
      ids.add(node.id);
      list(group).push(node.shape || node.op);
    }
  };
  for (const source of nodes) {
    const from = groupOf.get(source.id)!;
    for (const user of usersOf.get(source.id)!) {
      const to = groupOf.get(user)!;
      if (to === from) {
        continue;
      }
      const common = commonOfTwo(from, to);
      // the value leaves every group from `from` up to (not including) the common one, and enters
      // every group from `to` up to it
      for (let g: Group | undefined = from; g && g !== common; g = g.parent) {
        add(seenOut, (x) => x.outputs, g, source);
      }
      for (let g: Group | undefined = to; g && g !== common; g = g.parent) {
        add(seenIn, (x) => x.inputs, g, source);
      }
    }
  }
}

function markRepeats(group: Group): void {
  const families = new Map<string, Group[]>();
  for (const child of group.groups) {
    const key = `${child.className}/${child.total}`;
    (families.get(key) ?? families.set(key, []).get(key)!).push(child);
  }
  for (const family of families.values()) {
    if (family.length > 1) {
      family.forEach((g, index) => (g.repeat = { index, count: family.length }));
    }
  }
  group.groups.forEach(markRepeats);
}

/** A group's name inside its parent: `h.3` under `transformer`, the whole path under the root. */
export function shortName(group: Group): string {
  const parent = group.parent?.id ?? "";
  return parent && group.id.startsWith(parent + ".") ? group.id.slice(parent.length + 1) : group.id;
}

/** The groups from the outermost (below the root) down to the one `nodeId` is drawn in. */
export function groupPath(hierarchy: Hierarchy, nodeId: string): Group[] {
  const group = hierarchy.groupOf.get(nodeId);
  return group ? ancestors(group).reverse().slice(1) : [];
}

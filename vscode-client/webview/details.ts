// The details pane: everything the report says about the selected node or group, with links to the
// nodes it reads and its users (select them) and to its source line (reveal it).
import type { GraphNode, GraphReport, ReportSpan } from "../src/core/report";
import { Group, Hierarchy, shortName } from "./hierarchy";

export interface DetailsLinks {
  selectNode(id: string): void;
  selectGroup(id: string): void;
  reveal(span: ReportSpan, label: string): void;
}

// fields drawn in their own rows; any other field a newer server adds is listed as is
const SHOWN = new Set(["id", "op", "target", "shape", "dtype", "label", "line", "col", "end_line", "end_col", "scope", "function", "text", "flops", "overload", "value", "num_users"]);

function flopsText(flops: number): string {
  const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]] as const;
  const unit = units.find(([size]) => flops >= size);
  return unit ? `${(flops / unit[0]).toFixed(2)} ${unit[1]}FLOPs (${flops.toLocaleString("en")})` : `${flops} FLOPs`;
}

export class DetailsPane {
  // the pane (hidden while nothing is selected) and the part of it that holds the details
  private readonly body: HTMLElement;

  constructor(
    private readonly element: HTMLElement,
    private readonly links: DetailsLinks,
  ) {
    this.body = element.querySelector<HTMLElement>(".details-body") ?? element;
  }

  clear(): void {
    this.body.replaceChildren();
    this.element.hidden = true;
  }

  showNode(node: GraphNode, hierarchy: Hierarchy, report: GraphReport): void {
    const rows: [string, Node | string][] = [
      ["opcode", node.op],
      ["target", node.target + (node.overload ? `  (overload ${node.overload})` : "")],
      ["value", [node.shape, node.dtype].filter(Boolean).join(" ") || node.value || ""],
    ];
    const group = hierarchy.groupOf.get(node.id);
    if (group && group.id) {
      rows.push(["module", this.link(`${group.id} (${group.className})`, () => this.links.selectGroup(group.id))]);
    }
    rows.push(["source", node.line !== null ? this.link(`line ${node.line}${node.function ? ` in ${node.function}` : ""}`, () => this.links.reveal(node, node.id)) : "(no source line)"]);
    if (typeof node.flops === "number") {
      rows.push(["FLOPs", flopsText(node.flops)]);
    }
    const schema = report.schemas?.[node.target];
    if (schema?.schema) {
      rows.push(["schema", schema.schema]);
      if (schema.overloads?.length) {
        rows.push(["overloads", schema.overloads.join(", ")]);
      }
    }
    for (const [key, value] of Object.entries(node)) {
      if (!SHOWN.has(key) && value !== null && value !== undefined && value !== false && typeof value !== "object") {
        rows.push([key, String(value)]);
      }
    }
    const args = hierarchy.inputsOf.get(node.id) ?? [];
    const users = hierarchy.usersOf.get(node.id) ?? [];
    this.render(node.id, rows, [
      ["args", args.map((id) => this.nodeLink(hierarchy, id, (n) => n.shape || n.value || n.op))],
      ["users", users.map((id) => this.nodeLink(hierarchy, id, (n) => (n.line !== null ? `line ${n.line}` : n.op)))],
    ], node.text);
  }

  showGroup(group: Group): void {
    const rows: [string, Node | string][] = [
      ["class", group.className + (group.repeat ? `  (${group.repeat.index + 1} of ${group.repeat.count} alike)` : "")],
      ["nodes", String(group.total)],
      ["inputs", group.inputs.join(", ") || "()"],
      ["outputs", group.outputs.join(", ") || "()"],
      ["called", group.call ? this.link(`line ${group.call.line}`, () => this.links.reveal(group.call!, group.id)) : "(call line not known)"],
    ];
    this.render(group.id || "(root)", rows, [["submodules", group.groups.map((g) => this.link(`${shortName(g)} (${g.className})`, () => this.links.selectGroup(g.id)))]], "");
  }

  private nodeLink(hierarchy: Hierarchy, id: string, describe: (n: GraphNode) => string): Node {
    const node = hierarchy.nodes.get(id);
    return this.link(node ? `${id}: ${describe(node)}` : id, () => this.links.selectNode(id));
  }

  private link(text: string, action: () => void): HTMLAnchorElement {
    const anchor = document.createElement("a");
    anchor.href = "#";
    anchor.textContent = text;
    anchor.addEventListener("click", (event) => {
      event.preventDefault();
      action();
    });
    return anchor;
  }

  private render(title: string, rows: [string, Node | string][], lists: [string, Node[]][], printout: string | undefined): void {
    const heading = document.createElement("h3");
    heading.textContent = title;
    const table = document.createElement("dl");
    for (const [name, value] of rows) {
      const term = document.createElement("dt");
      term.textContent = name;
      const description = document.createElement("dd");
      description.append(value);
      table.append(term, description);
    }
    for (const [name, items] of lists) {
      if (items.length === 0) {
        continue;
      }
      const term = document.createElement("dt");
      term.textContent = `${name} (${items.length})`;
      const description = document.createElement("dd");
      const list = document.createElement("ul");
      for (const item of items) {
        const entry = document.createElement("li");
        entry.append(item);
        list.append(entry);
      }
      description.append(list);
      table.append(term, description);
    }
    const parts: Node[] = [heading, table];
    if (printout) {
      const pre = document.createElement("pre");
      pre.className = "printout-line";
      pre.textContent = printout;
      parts.push(pre);
    }
    this.body.replaceChildren(...parts);
    this.element.hidden = false;
  }
}

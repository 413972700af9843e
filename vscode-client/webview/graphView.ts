// Draws a laid-out graph into an <svg>: boxes per node, arrows per edge, pan (drag) and zoom (wheel),
// and highlight classes for search matches and the cursor's line.
import type { GraphNode } from "../src/core/report";
import { FONT_SIZE, GraphLayout, LINE_HEIGHT } from "./layout";

const SVG = "http://www.w3.org/2000/svg";
const MIN_SCALE = 0.1;
const MAX_SCALE = 4;
// a pointer that moves less than this between down and up is a click, not a pan
const CLICK_SLOP_PX = 4;

function svgElement<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    element.setAttribute(name, String(value));
  }
  return element;
}

export class GraphView {
  private layout: GraphLayout | undefined;
  private view = { x: 0, y: 0, scale: 1 };
  private readonly nodeElements = new Map<string, SVGGElement>();
  private drag: { startX: number; startY: number; viewX: number; viewY: number; moved: boolean } | undefined;

  constructor(
    private readonly svg: SVGSVGElement,
    private readonly onNodeClick: (node: GraphNode) => void,
  ) {
    svg.addEventListener("wheel", (event) => this.onWheel(event), { passive: false });
    svg.addEventListener("pointerdown", (event) => {
      this.drag = { startX: event.clientX, startY: event.clientY, viewX: this.view.x, viewY: this.view.y, moved: false };
    });
    svg.addEventListener("pointermove", (event) => this.onPointerMove(event));
    svg.addEventListener("pointerup", (event) => this.onPointerUp(event));
    new ResizeObserver(() => this.applyView()).observe(svg);
  }

  /** Draws `layout`; `keepView` keeps the pan and zoom (a redraw of the same graph after an edit). */
  draw(layout: GraphLayout, keepView = false): void {
    const firstDraw = this.layout === undefined;
    this.layout = layout;
    this.nodeElements.clear();
    this.svg.replaceChildren(this.arrowDefinition());
    const edges = svgElement("g", { class: "edges" });
    for (const edge of layout.edges) {
      const d = edge.points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
      const path = svgElement("path", { class: "edge", d, "marker-end": "url(#arrow)" });
      path.dataset.source = edge.source;
      path.dataset.target = edge.target;
      edges.append(path);
    }
    const nodes = svgElement("g", { class: "nodes" });
    for (const placed of layout.nodes) {
      const { node } = placed;
      const group = svgElement("g", {
        class: `node op-${node.op}` + (node.line === null ? " no-source" : "") + (node.change ? ` change-${node.change}` : ""),
        transform: `translate(${(placed.x - placed.width / 2).toFixed(1)},${(placed.y - placed.height / 2).toFixed(1)})`,
        tabindex: 0,
        role: "button",
      });
      group.dataset.id = node.id;
      const title = svgElement("title", {});
      title.textContent = node.label + (node.line !== null ? `\nline ${node.line}` : "\n(no source line)");
      group.append(title, svgElement("rect", { width: placed.width, height: placed.height, rx: 4 }));
      placed.lines.forEach((line, index) => {
        const text = svgElement("text", { x: 10, y: 8 + FONT_SIZE + index * LINE_HEIGHT, class: index === 0 ? "name" : "detail" });
        text.textContent = line;
        group.append(text);
      });
      group.addEventListener("click", () => {
        if (!this.drag?.moved) {
          this.onNodeClick(node);
        }
      });
      group.addEventListener("keydown", (event) => event.key === "Enter" && this.onNodeClick(node));
      nodes.append(group);
      this.nodeElements.set(node.id, group);
    }
    this.svg.append(edges, nodes);
    if (keepView && !firstDraw) {
      this.applyView();
    } else {
      this.fit();
    }
  }

  /** Marks nodes with a CSS class (`match`, `cursor`), clearing it from all others. */
  highlight(cssClass: string, ids: readonly string[]): void {
    const chosen = new Set(ids);
    for (const [id, element] of this.nodeElements) {
      element.classList.toggle(cssClass, chosen.has(id));
    }
    this.svg.classList.toggle(`has-${cssClass}`, chosen.size > 0);
  }

  /** Pans so that node `id` is in the middle of the view. */
  centreOn(id: string): void {
    const placed = this.layout?.nodes.find((n) => n.node.id === id);
    if (!placed) {
      return;
    }
    const { width, height } = this.viewSize();
    this.view.x = placed.x - width / this.view.scale / 2;
    this.view.y = placed.y - height / this.view.scale / 2;
    this.applyView();
  }

  /** Scales the graph into the view: `whole` shrinks it as far as needed, else only while text stays readable. */
  fit(whole = false): void {
    const layout = this.layout;
    if (!layout) {
      return;
    }
    const { width, height } = this.viewSize();
    const fitting = Math.min(1, width / Math.max(layout.width, 1), height / Math.max(layout.height, 1));
    // by default: the whole graph when it is small; otherwise readable text from the top, panned by dragging
    this.view.scale = whole ? Math.max(MIN_SCALE, fitting) : Math.max(0.45, fitting);
    this.view.x = layout.width / 2 - width / this.view.scale / 2;
    this.view.y = 0;
    this.applyView();
  }

  private viewSize(): { width: number; height: number } {
    const box = this.svg.getBoundingClientRect();
    return { width: Math.max(box.width, 1), height: Math.max(box.height, 1) };
  }

  private applyView(): void {
    const { width, height } = this.viewSize();
    const { x, y, scale } = this.view;
    this.svg.setAttribute("viewBox", `${x.toFixed(1)} ${y.toFixed(1)} ${(width / scale).toFixed(1)} ${(height / scale).toFixed(1)}`);
  }

  private onWheel(event: WheelEvent): void {
    event.preventDefault();
    const box = this.svg.getBoundingClientRect();
    const pointerX = this.view.x + (event.clientX - box.left) / this.view.scale;
    const pointerY = this.view.y + (event.clientY - box.top) / this.view.scale;
    const scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, this.view.scale * Math.exp(-event.deltaY / 500)));
    // keep the graph point under the pointer where it is
    this.view = { x: pointerX - (event.clientX - box.left) / scale, y: pointerY - (event.clientY - box.top) / scale, scale };
    this.applyView();
  }

  private onPointerMove(event: PointerEvent): void {
    const drag = this.drag;
    if (!drag || (event.buttons & 1) === 0) {
      return;
    }
    const dx = event.clientX - drag.startX;
    const dy = event.clientY - drag.startY;
    if (!drag.moved && Math.hypot(dx, dy) < CLICK_SLOP_PX) {
      return;
    }
    if (!drag.moved) {
      drag.moved = true;
      this.svg.setPointerCapture(event.pointerId);
    }
    this.view.x = drag.viewX - dx / this.view.scale;
    this.view.y = drag.viewY - dy / this.view.scale;
    this.applyView();
  }

  private onPointerUp(event: PointerEvent): void {
    if (this.drag?.moved) {
      this.svg.releasePointerCapture(event.pointerId);
      // the click event that follows this pointerup must not count as a node click
      const drag = this.drag;
      setTimeout(() => this.drag === drag && (this.drag = undefined));
    } else {
      this.drag = undefined;
    }
  }

  private arrowDefinition(): SVGDefsElement {
    const defs = svgElement("defs", {});
    const marker = svgElement("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svgElement("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }));
    defs.append(marker);
    return defs;
  }
}

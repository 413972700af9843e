// Draws a laid-out drawing into an <svg>: expanded groups as frames, collapsed groups and nodes as
// boxes, edges as routes; pan (drag), zoom (wheel), highlight classes, and keyboard moves between boxes.
import { kernelClasses, kernelTitle } from "./kernelColours";
import { Drawing, FONT_SIZE, Item, LINE_HEIGHT, PADDING_X, PADDING_Y } from "./visible";

const SVG = "http://www.w3.org/2000/svg";
const MIN_SCALE = 0.05;
const MAX_SCALE = 4;
// a pointer that moves less than this between down and up is a click, not a pan
const CLICK_SLOP_PX = 4;

export function svgElement<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    element.setAttribute(name, String(value));
  }
  return element;
}

export interface ViewEvents {
  select(item: Item): void; // a click or Enter on a box or a group's header
  toggle(item: Item): void; // a group's ▸/▾, a double click, or Space
}

function itemClasses(item: Item): string {
  if (item.group) {
    return `group ${item.expanded ? "expanded" : "collapsed"}` + (item.group.repeat ? " repeated" : "");
  }
  const node = item.node!;
  return `node op-${node.op}` + (node.line === null ? " no-source" : "") + (typeof node.change === "string" ? ` change-${node.change}` : "") + kernelClasses(node);
}

export class GraphView {
  private drawing: Drawing | undefined;
  private view = { x: 0, y: 0, scale: 1 };
  private readonly elements = new Map<string, SVGGElement>();
  private drag: { startX: number; startY: number; viewX: number; viewY: number; moved: boolean } | undefined;

  constructor(
    private readonly svg: SVGSVGElement,
    private readonly events: ViewEvents,
  ) {
    svg.addEventListener("wheel", (event) => this.onWheel(event), { passive: false });
    svg.addEventListener("pointerdown", (event) => {
      this.drag = { startX: event.clientX, startY: event.clientY, viewX: this.view.x, viewY: this.view.y, moved: false };
    });
    svg.addEventListener("pointermove", (event) => this.onPointerMove(event));
    svg.addEventListener("pointerup", (event) => this.onPointerUp(event));
    svg.addEventListener("click", (event) => this.onClick(event));
    svg.addEventListener("dblclick", (event) => {
      const item = this.itemAt(event.target);
      item?.group && this.events.toggle(item);
    });
    new ResizeObserver(() => this.applyView()).observe(svg);
  }

  get current(): Drawing | undefined {
    return this.drawing;
  }

  item(key: string): Item | undefined {
    return this.drawing?.items.find((i) => i.key === key);
  }

  has(key: string): boolean {
    return this.elements.has(key);
  }

  /** Draws `drawing`; `keepView` keeps the pan and zoom (a redraw after an edit, an expanded group). */
  draw(drawing: Drawing, keepView = false): void {
    const firstDraw = this.drawing === undefined;
    this.drawing = drawing;
    this.elements.clear();
    const frames = svgElement("g", { class: "groups" });
    const edges = svgElement("g", { class: "edges" });
    const boxes = svgElement("g", { class: "nodes" });
    for (const item of drawing.items) {
      (item.expanded ? frames : boxes).append(this.itemElement(item));
    }
    for (const edge of drawing.edges) {
      const d = edge.points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
      const path = svgElement("path", { class: "edge", d, "marker-end": "url(#arrow)" });
      path.dataset.source = edge.source;
      path.dataset.target = edge.target;
      edges.append(path);
    }
    this.svg.replaceChildren(this.arrowDefinition(), frames, edges, boxes);
    if (keepView && !firstDraw) {
      this.applyView();
    } else {
      this.fit();
    }
  }

  private itemElement(item: Item): SVGGElement {
    const element = svgElement("g", { class: itemClasses(item), transform: `translate(${item.x.toFixed(1)},${item.y.toFixed(1)})`, tabindex: -1, role: "button" });
    element.dataset.key = item.key;
    if (item.node) {
      element.dataset.id = item.node.id;
    } else {
      element.dataset.group = item.group!.id;
      element.setAttribute("aria-expanded", String(item.expanded));
    }
    const title = svgElement("title", {});
    title.textContent = item.lines.join("\n") + (item.node ? (item.node.line !== null ? `\nline ${item.node.line}` : "\n(no source line)") + kernelTitle(item.node) : item.group?.call ? `\ncalled on line ${item.group.call.line}` : "");
    const height = item.expanded ? item.lines.length * LINE_HEIGHT + 2 * PADDING_Y : item.height;
    if (item.group?.repeat && !item.expanded) {
      // a stack of cards: one of several instances of the same class
      element.append(svgElement("rect", { class: "stack", x: 4, y: 4, width: item.width, height: item.height, rx: 4 }));
    }
    element.append(title, svgElement("rect", { class: "box", width: item.width, height: item.expanded ? item.height : height, rx: item.group ? 6 : 4 }));
    item.lines.forEach((line, index) => {
      const text = svgElement("text", { x: PADDING_X + (item.group ? 14 : 0), y: PADDING_Y + FONT_SIZE + index * LINE_HEIGHT, class: index === 0 ? "name" : "detail" });
      text.textContent = line;
      element.append(text);
    });
    if (item.group) {
      const toggle = svgElement("text", { x: PADDING_X - 2, y: PADDING_Y + FONT_SIZE, class: "toggle" });
      toggle.textContent = item.expanded ? "▾" : "▸";
      element.append(toggle);
    }
    this.elements.set(item.key, element);
    return element;
  }

  /** Removes the drawing (the next draw fits the view again). */
  clear(): void {
    this.drawing = undefined;
    this.elements.clear();
    this.svg.replaceChildren();
  }

  /** Marks items with a CSS class (`match`, `cursor`, `selected`), clearing it from all others. */
  highlight(cssClass: string, keys: Iterable<string>): void {
    const chosen = new Set(keys);
    for (const [key, element] of this.elements) {
      element.classList.toggle(cssClass, chosen.has(key));
    }
    this.svg.classList.toggle(`has-${cssClass}`, chosen.size > 0);
  }

  /** Pans so that item `key` is in the middle of the view, and gives it the keyboard focus. */
  centreOn(key: string, focus = false): void {
    const item = this.item(key);
    if (!item) {
      return;
    }
    const { width, height } = this.viewSize();
    const headerOnly = item.expanded ? LINE_HEIGHT * 2 : item.height;
    this.view.x = item.x + item.width / 2 - width / this.view.scale / 2;
    this.view.y = item.y + Math.min(item.height, headerOnly) / 2 - height / this.view.scale / 2;
    this.applyView();
    focus && this.elements.get(key)?.focus({ preventScroll: true });
  }

  /** Scales the drawing into the view: `whole` shrinks it as far as needed, else only while text stays readable. */
  fit(whole = false): void {
    const drawing = this.drawing;
    if (!drawing) {
      return;
    }
    const { width, height } = this.viewSize();
    const fitting = Math.min(1, width / Math.max(drawing.width, 1), height / Math.max(drawing.height, 1));
    this.view.scale = whole ? Math.max(MIN_SCALE, fitting) : Math.max(0.45, fitting);
    this.view.x = drawing.width / 2 - width / this.view.scale / 2;
    this.view.y = 0;
    this.applyView();
  }

  zoom(factor: number): void {
    const { width, height } = this.viewSize();
    const centre = { x: this.view.x + width / this.view.scale / 2, y: this.view.y + height / this.view.scale / 2 };
    this.view.scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, this.view.scale * factor));
    this.view.x = centre.x - width / this.view.scale / 2;
    this.view.y = centre.y - height / this.view.scale / 2;
    this.applyView();
  }

  /** The box the keyboard reaches from `key` going `direction`: along the edges up or down, or to the nearest neighbour in its row. */
  neighbour(key: string, direction: "up" | "down" | "left" | "right"): string | undefined {
    const drawing = this.drawing;
    const from = this.item(key);
    if (!drawing || !from) {
      return undefined;
    }
    if (direction === "up" || direction === "down") {
      const linked = drawing.edges.filter((e) => (direction === "down" ? e.source === key : e.target === key)).map((e) => (direction === "down" ? e.target : e.source));
      const candidates = linked.map((k) => this.item(k)!).filter(Boolean).sort((a, b) => Math.abs(a.x - from.x) - Math.abs(b.x - from.x));
      if (candidates.length) {
        return candidates[0].key;
      }
    }
    const centre = (i: Item) => ({ x: i.x + i.width / 2, y: i.y + Math.min(i.height, 40) / 2 });
    const here = centre(from);
    let best: { key: string; distance: number } | undefined;
    for (const item of drawing.items) {
      if (item === from) {
        continue;
      }
      const there = centre(item);
      const dx = there.x - here.x;
      const dy = there.y - here.y;
      const ahead = direction === "left" ? dx < -1 : direction === "right" ? dx > 1 : direction === "up" ? dy < -1 : dy > 1;
      // distance along the direction counts once, across it three times: stay in the row or column
      const along = direction === "left" || direction === "right" ? Math.abs(dx) + 3 * Math.abs(dy) : Math.abs(dy) + 3 * Math.abs(dx);
      if (ahead && (!best || along < best.distance)) {
        best = { key: item.key, distance: along };
      }
    }
    return best?.key;
  }

  private itemAt(target: EventTarget | null): Item | undefined {
    const element = (target as Element | null)?.closest?.("g.node, g.group") as SVGGElement | null;
    return element?.dataset.key ? this.item(element.dataset.key) : undefined;
  }

  private onClick(event: MouseEvent): void {
    if (this.drag?.moved) {
      return;
    }
    const item = this.itemAt(event.target);
    if (!item) {
      return;
    }
    const onToggle = (event.target as Element).classList.contains("toggle");
    // an expanded group's frame is clickable on its header only: below it lie its nodes
    const box = this.elements.get(item.key)!.getBoundingClientRect();
    const headerBottom = box.top + (item.lines.length * LINE_HEIGHT + 2 * PADDING_Y) * this.view.scale;
    if (item.expanded && event.clientY > headerBottom) {
      return;
    }
    if (onToggle) {
      this.events.toggle(item);
    } else {
      this.events.select(item);
    }
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
      // the click event that follows this pointerup must not count as a box click
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

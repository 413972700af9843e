// The split view: a second level of the same class drawn beside the main one (fx | aten, say). The
// levels are linked through the source: a node chosen at either level marks the nodes of the same
// span at the other, and the editor's cursor line marks its nodes in both.
import type { GraphNode, GraphReport, ReportSpan } from "../src/core/report";
import { LayoutJobs } from "./layoutJob";
import { GraphView } from "./graphView";
import { buildHierarchy, Group, Hierarchy } from "./hierarchy";
import { nodesOfSpan, nodesOnLine } from "./search";
import { groupKey, representative } from "./visible";

// as in the main view: a graph this small is drawn with every group open
const OPEN_ALL_BELOW = 60;

export interface SplitLinks {
  // a node chosen at the side level: its span is what the main view marks, its source is revealed
  choose(node: GraphNode): void;
}

export class SplitPane {
  // its own layout worker: a long layout beside never holds up the main view's
  private readonly layouts: LayoutJobs;
  private readonly view: GraphView;
  private report: GraphReport | undefined;
  private hierarchy: Hierarchy | undefined;
  private expanded = new Set<string>();
  private span: ReportSpan | undefined;
  private cursorLine: number | null = null;
  private selected: string | undefined;
  private draws = 0;
  private captionText = "";

  constructor(
    private readonly pane: HTMLElement,
    private readonly caption: HTMLElement,
    svg: SVGSVGElement,
    private readonly links: SplitLinks,
  ) {
    this.layouts = new LayoutJobs((text) => (this.caption.textContent = text ? `${this.captionText} — ${text}` : this.captionText));
    this.view = new GraphView(svg, {
      select: (item) => {
        if (item.node) {
          this.selected = item.key;
          this.span = item.node.line !== null ? item.node : this.span;
          this.applyHighlights();
          this.links.choose(item.node);
        }
      },
      toggle: (item) => item.group && void this.toggle(item.group),
    });
  }

  get level(): string | undefined {
    return this.report?.level;
  }

  /** Draws `report` beside the main view, or closes the split (undefined); `problem` says why a level has no graph. */
  show(report: GraphReport | undefined, problem?: string): void {
    this.pane.hidden = report === undefined && !problem;
    const same = report !== undefined && this.report?.class === report.class && this.report.level === report.level;
    this.report = report;
    this.hierarchy = report ? buildHierarchy(report) : undefined;
    if (!same) {
      this.selected = undefined;
      this.expanded = report && report.graph.nodes.length <= OPEN_ALL_BELOW ? new Set(this.hierarchy!.groups.keys()) : new Set();
    }
    this.captionText = report ? `${report.level}: ${report.graph.nodes.length} nodes` + (report.ok ? "" : " (failed)") : problem ?? "";
    this.caption.textContent = this.captionText;
    same || this.view.clear();
    this.pane.dataset.level = report?.level ?? "";
    void this.relayout(same);
  }

  /** The span chosen at the main level: its nodes here are marked `linked` (and none selected). */
  link(span: ReportSpan | undefined): void {
    this.span = span;
    this.selected = undefined;
    this.applyHighlights();
    const first = this.report ? nodesOfSpan(this.report.graph.nodes, span)[0] : undefined;
    first && this.hierarchy && this.view.centreOn(representative(this.hierarchy, this.expanded, first));
  }

  /** This graph's own zoom, apart from the main view's. */
  zoom(factor: number): void {
    this.view.zoom(factor);
  }

  fit(): void {
    this.view.fit(true);
  }

  cursor(line: number | null): void {
    this.cursorLine = line;
    this.applyHighlights();
  }

  private async relayout(keepView: boolean): Promise<void> {
    const shown = this.hierarchy;
    if (!shown) {
      this.view.draw({ items: [], edges: [], width: 0, height: 0 });
      return;
    }
    const report = this.report!;
    const laid = await this.layouts.run(shown, this.expanded, `${report.class} (${report.level})`).catch(() => undefined);
    if (!laid || shown !== this.hierarchy) {
      return;
    }
    this.view.draw(laid.drawing, keepView);
    this.caption.title = laid.note;
    this.applyHighlights();
    this.pane.dataset.draws = String(++this.draws);
  }

  private async toggle(group: Group): Promise<void> {
    const close = (g: Group) => {
      this.expanded.delete(g.id);
      g.groups.forEach(close);
    };
    this.expanded.has(group.id) ? close(group) : this.expanded.add(group.id);
    await this.relayout(true);
    this.view.centreOn(groupKey(group));
  }

  private mark(cssClass: string, ids: Iterable<string>): void {
    const direct = new Set<string>();
    const holders = new Set<string>();
    for (const id of ids) {
      const key = this.hierarchy ? representative(this.hierarchy, this.expanded, id) : id;
      (key === id ? direct : holders).add(key);
    }
    this.view.highlight(cssClass, direct);
    this.view.highlight(`contains-${cssClass}`, holders);
  }

  private applyHighlights(): void {
    const nodes = this.report?.graph.nodes ?? [];
    this.mark("cursor", nodesOnLine(nodes, this.cursorLine));
    this.mark("linked", nodesOfSpan(nodes, this.span).filter((id) => id !== this.selected));
    this.view.highlight("selected", this.selected ? [this.selected] : []);
  }
}

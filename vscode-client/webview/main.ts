// The graph page: receives reports from the extension, draws the open part of their module hierarchy,
// and reports clicks (reveal a span), level choices and exports back.
import type { HostToPage, PageToHost } from "../src/core/messages";
import { SEE_PROBLEMS } from "../src/core/report";
import type { GraphReport, ReportSpan } from "../src/core/report";
import { DetailsPane } from "./details";
import { LayoutJobs } from "./layoutJob";
import { exportDrawing } from "./exportView";
import { GraphView } from "./graphView";
import { buildHierarchy, Group, groupPath, Hierarchy } from "./hierarchy";
import { failureNode, levelChoices, showDiagnostics, splitChoices } from "./pageReport";
import { PassPane } from "./passPane";
import { matchingNodes, nodesOfSpan, nodesOnLine } from "./search";
import { collapsible, oneRowToolbar, resizable, tabs } from "./panes";
import { SplitPane } from "./splitView";
import { groupKey, Item, representative } from "./visible";
import { clearPhases, since, timed } from "./timing";

declare function acquireVsCodeApi(): { postMessage(message: PageToHost): void };

// a graph this small reads at once: drawn with every group open
const OPEN_ALL_BELOW = 60;

const host = acquireVsCodeApi();
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const title = byId<HTMLSpanElement>("title");
const rung = byId<HTMLSpanElement>("rung");
const levelSelect = byId<HTMLSelectElement>("level");
const splitSelect = byId<HTMLSelectElement>("split-level");
const searchBox = byId<HTMLInputElement>("search");
const searchCount = byId<HTMLSpanElement>("search-count");
const followBox = byId<HTMLInputElement>("follow");
const message = byId<HTMLDivElement>("message");
const diagnosticsList = byId<HTMLUListElement>("diagnostics");
const graphSection = byId<HTMLElement>("graph-view");
const svg = document.getElementById("graph") as unknown as SVGSVGElement;

const layoutStatus = byId<HTMLDivElement>("layout-status");
const layouts = new LayoutJobs((text) => showLayoutStatus(text ?? "", "loading"));
let report: GraphReport | undefined;
let hierarchy: Hierarchy | undefined;
let expanded = new Set<string>();
let selected: string | undefined; // key of the selected box
// the span chosen at any level: the nodes of the same span are marked at the level shown
let chosenSpan: ReportSpan | undefined;
let cursorLine: number | null = null;
let matches: string[] = [];
let matchIndex = -1;
// counts drawings: lets a test (or a person in the webview devtools) see that a redraw happened
let draws = 0;
// the pass whose after-graph is drawn (a pass preview), if any
let shownPass: string | undefined;
// puts the toolbar on one row again: its title and choices change with each report
let arrangeToolbar = () => {};

const view = new GraphView(svg, { select: (item) => choose(item, true), toggle: (item) => item.group && toggleGroup(item.group) });
const details = new DetailsPane(byId("details"), {
  selectNode: (id) => void revealInGraph(id, false),
  selectGroup: (id) => {
    const group = hierarchy?.groups.get(id);
    group && void showGroup(group);
  },
  reveal: (span, label) => postReveal(span, label, false),
});

const passPane = new PassPane(byId("pass"), {
  selectNode: (id) => void revealInGraph(id, false),
  close: () => host.postMessage({ type: "closePass" }),
});

// a second level beside: a node chosen there marks (and pans to) the same span here
const split = new SplitPane(byId("split"), byId("split-caption"), document.getElementById("split-graph") as unknown as SVGSVGElement, {
  choose: (node) => {
    chosenSpan = node.line !== null ? node : chosenSpan;
    applyHighlights();
    const first = report ? nodesOfSpan(report.graph.nodes, chosenSpan)[0] : undefined;
    first && hierarchy && view.centreOn(representative(hierarchy, expanded, first));
    postReveal(node, node.id, false);
  },
});

function postReveal(span: ReportSpan, label: string, group: boolean): void {
  if (span.line === null) {
    showMessage(`${label} has no source line in this file.`, "info");
    return;
  }
  host.postMessage({ type: "reveal", node: label, line: span.line, col: span.col, end_line: span.end_line, end_col: span.end_col, ...(group ? { group: true } : {}) });
}

/** Selects a box: its details, the same span at other levels; `reveal` also shows its source. */
function choose(item: Item, reveal: boolean): void {
  selected = item.key;
  if (item.node) {
    chosenSpan = item.node.line !== null ? item.node : chosenSpan;
    details.showNode(item.node, hierarchy!, report!);
    reveal && postReveal(item.node, item.node.id, false);
    split.link(chosenSpan);
  } else if (item.group) {
    details.showGroup(item.group);
    const call = item.group.call ?? item.group.nodes.find((n) => n.line !== null);
    reveal && (call ? postReveal(call, item.group.id, true) : showMessage(`${item.group.id} has no source line in this file.`, "info"));
  }
  applyHighlights();
}

function showMessage(text: string, kind: "info" | "error" | "loading"): void {
  message.textContent = text;
  message.className = `message ${kind}`;
  message.hidden = text === "";
}

function showLayoutStatus(text: string, kind: "info" | "loading"): void {
  layoutStatus.textContent = text;
  layoutStatus.className = `message ${kind}`;
  layoutStatus.hidden = text === "";
}

/** Takes the drawing down while another class or level is on its way: never one level's boxes under another's name. */
function clearDrawing(): void {
  layouts.cancel();
  view.clear();
  delete document.body.dataset.drawnLevel;
  delete document.body.dataset.drawnClass;
}

/** Lays out what is open and draws it; `keepView` keeps the pan and zoom. */
async function relayout(keepView: boolean): Promise<void> {
  const shown = hierarchy;
  if (!shown) {
    return;
  }
  const drawn = report!;
  const started = performance.now();
  document.body.dataset.layout = "running";
  let laid;
  try {
    laid = await layouts.run(shown, expanded, `${drawn.class} (${drawn.level})`);
  } catch (error) {
    showLayoutStatus("", "info");
    showMessage(`The graph could not be laid out: ${error instanceof Error ? error.message : String(error)}`, "error");
    return;
  }
  if (!laid || shown !== hierarchy) {
    return; // a newer layout is on its way
  }
  timed("draw", () => {
    view.draw(laid.drawing, keepView);
    applyHighlights();
  });
  showLayoutStatus(laid.note, "info");
  Object.assign(document.body.dataset, {
    layout: "done", layoutHow: laid.how, layoutMs: (performance.now() - started).toFixed(1), boxes: String(laid.boxes),
    drawnLevel: drawn.level, drawnClass: drawn.class, draws: String(++draws),
  });
}

/** Marks the nodes `ids` with `cssClass`; a collapsed group holding some gets `contains-<cssClass>`. */
function mark(cssClass: string, ids: Iterable<string>): void {
  const direct = new Set<string>();
  const holders = new Set<string>();
  for (const id of ids) {
    const key = hierarchy ? representative(hierarchy, expanded, id) : id;
    (key === id ? direct : holders).add(key);
  }
  view.highlight(cssClass, direct);
  view.highlight(`contains-${cssClass}`, holders);
}

function applyHighlights(): void {
  const nodes = report?.graph.nodes ?? [];
  mark("match", matches);
  mark("cursor", nodesOnLine(nodes, cursorLine));
  mark("linked", nodesOfSpan(nodes, chosenSpan).filter((id) => id !== selected));
  mark("failure", nodes.filter((n) => n.op === "failure").map((n) => n.id));
  view.highlight("selected", selected ? [selected] : []);
}

async function toggleGroup(group: Group): Promise<void> {
  expanded.has(group.id) ? collapse(group) : expanded.add(group.id);
  await relayout(true);
  view.centreOn(groupKey(group), true);
}

function collapse(group: Group): void {
  expanded.delete(group.id);
  group.groups.forEach(collapse);
}

/** Opens the groups around node `id`, draws, selects it and pans to it. */
async function revealInGraph(id: string, reveal: boolean): Promise<void> {
  if (!hierarchy) {
    return;
  }
  const closed = groupPath(hierarchy, id).filter((g) => !expanded.has(g.id));
  closed.forEach((g) => expanded.add(g.id));
  if (closed.length) {
    await relayout(true);
  }
  const item = view.item(id);
  if (item) {
    choose(item, reveal);
    view.centreOn(id, true);
  }
}

async function showGroup(group: Group): Promise<void> {
  const closed: Group[] = [];
  for (let g = group.parent; g && g.parent; g = g.parent) {
    expanded.has(g.id) || closed.push(g);
  }
  closed.forEach((g) => expanded.add(g.id));
  if (closed.length) {
    await relayout(true);
  }
  const item = view.item(groupKey(group));
  if (item) {
    choose(item, false);
    view.centreOn(item.key, true);
  }
}

/** Draws a report; `pass` names the pass whose after-graph it is. */
function showReport(next: GraphReport, pass: string | undefined): void {
  // the same class and level (and pass) again, the file was edited: keep what is open and the pan and zoom
  const sameGraph = report !== undefined && report.class === next.class && report.level === next.level && shownPass === pass;
  shownPass = pass;
  const failure = failureNode(next);
  report = failure ? { ...next, graph: { nodes: [...next.graph.nodes, failure.node], edges: [...next.graph.edges, ...failure.edges] } } : next;
  hierarchy = timed("hierarchy", () => buildHierarchy(report!));
  if (sameGraph) {
    expanded = new Set([...expanded].filter((id) => hierarchy!.groups.has(id)));
  } else {
    expanded = report.graph.nodes.length <= OPEN_ALL_BELOW ? new Set(hierarchy.groups.keys()) : new Set();
    selected = undefined;
    details.clear();
    clearDrawing();
  }
  document.body.dataset.state = next.ok ? "ok" : "failed";
  title.textContent = next.class;
  levelSelect.replaceChildren(...levelChoices(next));
  rung.textContent = next.rung ?? "";
  splitSelect.replaceChildren(...splitChoices(next, split.level));
  showDiagnostics(diagnosticsList, next.diagnostics ?? [], (d) => postReveal(d, "", false));
  byId("printout").textContent = next.printout;
  byId("code").textContent = next.code;
  byId("table").textContent = next.table;
  if (next.ok) {
    showMessage(next.message ?? "", "info");
  } else {
    const partial = next.graph.nodes.length ? " What traced before the failure is drawn; the failure is marked." : "";
    showMessage((next.message || `${next.level}: ${next.class} could not be traced at this level — ${SEE_PROBLEMS}.`) + partial, "error");
  }
  document.body.dataset.nodes = String(next.graph.nodes.length);
  arrangeToolbar();
  matches = matchingNodes(report.graph.nodes, searchBox.value);
  matchIndex = -1;
  showSearchCount();
  void relayout(sameGraph).then(followCursor);
}

function showSearchCount(): void {
  const position = matchIndex >= 0 ? `${matchIndex + 1} of ` : "";
  searchCount.textContent = searchBox.value.trim() ? `${position}${matches.length} match${matches.length === 1 ? "" : "es"}` : "";
}

function applySearch(): void {
  matches = report ? matchingNodes(report.graph.nodes, searchBox.value) : [];
  matchIndex = -1;
  showSearchCount();
  applyHighlights();
}

async function stepSearch(step: 1 | -1): Promise<void> {
  if (matches.length === 0) {
    return;
  }
  matchIndex = (matchIndex + step + matches.length) % matches.length;
  showSearchCount();
  await revealInGraph(matches[matchIndex], false);
}

/** Follow mode: pans to what stands for the cursor line's first node. */
function followCursor(): void {
  if (!followBox.checked || !hierarchy || !report) {
    return;
  }
  const first = nodesOnLine(report.graph.nodes, cursorLine)[0];
  first && view.centreOn(representative(hierarchy, expanded, first));
}

function onKey(event: KeyboardEvent): void {
  const arrows: Record<string, "up" | "down" | "left" | "right"> = { ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right" };
  const item = selected ? view.item(selected) : undefined;
  if (arrows[event.key]) {
    const next = item ? view.neighbour(item.key, arrows[event.key]) : view.current?.items.find((i) => !i.expanded)?.key;
    const target = next ? view.item(next) : undefined;
    if (target) {
      choose(target, false);
      view.centreOn(target.key, true);
    }
  } else if (event.key === "Enter" && item) {
    choose(item, true);
  } else if (event.key === " " && item?.group) {
    void toggleGroup(item.group);
  } else if (event.key === "+" || event.key === "=") {
    view.zoom(1.25);
  } else if (event.key === "-") {
    view.zoom(0.8);
  } else if (event.key === "0") {
    view.fit(true);
  } else if (event.key === "/") {
    searchBox.focus();
  } else if (event.key === "Escape") {
    selected = undefined;
    chosenSpan = undefined;
    split.link(undefined);
    details.clear();
    applyHighlights();
  } else {
    return;
  }
  event.preventDefault();
}

function handle(data: HostToPage): void {
  switch (data.type) {
    case "report":
      timed("report", () => showReport(data.report, data.pass?.pass ?? undefined));
      passPane.show(data.pass);
      break;
    case "loading":
      // another level (or class) is coming: the drawing shown is not of it
      (data.level !== report?.level || (data.className && data.className !== report?.class)) && clearDrawing();
      showMessage(`Tracing ${data.className || "the module"} (${data.level})…`, "loading");
      break;
    case "error":
      showMessage(data.message, "error");
      break;
    case "split": {
      // the main view gets narrower (or wider): fit its drawing to its new width
      const wasOpen = !byId("split").hidden;
      split.show(data.report ?? undefined, data.message);
      byId("split-divider").hidden = byId("split").hidden;
      wasOpen !== !byId("split").hidden && view.fit();
      split.link(chosenSpan);
      split.cursor(cursorLine);
      break;
    }
    case "cursor":
      cursorLine = data.line;
      split.cursor(cursorLine);
      applyHighlights();
      followCursor();
      break;
  }
}

window.addEventListener("message", (event: MessageEvent) => {
  // reading `data` is when the browser unpacks a posted report: the phase "receive"
  const start = performance.now();
  const data = event.data as HostToPage;
  data.type === "report" && clearPhases();
  since("receive", start);
  handle(data);
});
svg.addEventListener("keydown", onKey);
byId<HTMLButtonElement>("fit").addEventListener("click", () => view.fit(true));
byId<HTMLButtonElement>("expand-all").addEventListener("click", () => {
  expanded = new Set(hierarchy?.groups.keys() ?? []);
  // everything open is another drawing altogether: fit it, the old pan would point into empty space
  void relayout(false);
});
byId<HTMLButtonElement>("collapse-all").addEventListener("click", () => {
  expanded = new Set();
  void relayout(false);
});
byId<HTMLButtonElement>("search-next").addEventListener("click", () => void stepSearch(1));
byId<HTMLButtonElement>("search-previous").addEventListener("click", () => void stepSearch(-1));
byId<HTMLButtonElement>("export-svg").addEventListener("click", () => void exportDrawing(svg, view.current, report, "svg", (m) => host.postMessage(m)));
byId<HTMLButtonElement>("export-png").addEventListener("click", () => void exportDrawing(svg, view.current, report, "png", (m) => host.postMessage(m)));
levelSelect.addEventListener("change", () => host.postMessage({ type: "level", level: levelSelect.value }));
splitSelect.addEventListener("change", () => host.postMessage({ type: "split", level: splitSelect.value || null }));
searchBox.addEventListener("input", applySearch);
searchBox.addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    void stepSearch(event.shiftKey ? -1 : 1);
  }
});
tabs((tab) => (document.body.dataset.tab = tab));
arrangeToolbar = oneRowToolbar(byId("toolbar"), byId("overflow"), byId("overflow-button"), byId("overflow-menu"));
// a pane resized or collapsed leaves the graph another width: keep its drawing fitted
resizable(byId("details-divider"), byId("details"), graphSection, () => view.fit());
resizable(byId("split-divider"), byId("split"), graphSection, () => view.fit());
collapsible(byId("details"), byId("details-collapse"), () => view.fit());
byId("split-zoom-in").addEventListener("click", () => split.zoom(1.25));
byId("split-zoom-out").addEventListener("click", () => split.zoom(0.8));
byId("split-fit").addEventListener("click", () => split.fit());
host.postMessage({ type: "ready" });

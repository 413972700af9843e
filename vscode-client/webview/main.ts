// The graph page: receives reports from the extension, draws them, and reports clicks back.
import type { HostToPage, PageToHost } from "../src/core/messages";
import type { GraphNode, GraphReport, ReportDiagnostic } from "../src/core/report";
import { GraphView } from "./graphView";
import { layoutGraph } from "./layout";
import { matchingNodes, nodesOnLine } from "./search";

declare function acquireVsCodeApi(): { postMessage(message: PageToHost): void };

const host = acquireVsCodeApi();
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const title = byId<HTMLSpanElement>("title");
const levelSelect = byId<HTMLSelectElement>("level");
const searchBox = byId<HTMLInputElement>("search");
const searchCount = byId<HTMLSpanElement>("search-count");
const message = byId<HTMLDivElement>("message");
const diagnosticsList = byId<HTMLUListElement>("diagnostics");
const graphSection = byId<HTMLElement>("graph-view");
const textSection = byId<HTMLElement>("text-view");

let report: GraphReport | undefined;
let cursorLine: number | null = null;
let matches: string[] = [];
let matchIndex = -1;
// counts drawn reports: lets a test (or a person in the webview devtools) see that a redraw happened
let draws = 0;

const view = new GraphView(document.getElementById("graph") as unknown as SVGSVGElement, revealNode);

function revealNode(node: GraphNode): void {
  if (node.line === null) {
    showMessage(`${node.id} (${node.op}) has no source line in this file.`, "info");
    return;
  }
  host.postMessage({ type: "reveal", node: node.id, line: node.line, col: node.col, end_line: node.end_line, end_col: node.end_col });
}

function showMessage(text: string, kind: "info" | "error" | "loading"): void {
  message.textContent = text;
  message.className = `message ${kind}`;
  message.hidden = text === "";
}

function showLevels(levels: string[], current: string): void {
  levelSelect.replaceChildren(
    ...levels.map((level) => {
      const option = document.createElement("option");
      option.value = option.textContent = level;
      option.selected = level === current;
      return option;
    }),
  );
}

function showDiagnostics(diagnostics: ReportDiagnostic[]): void {
  diagnosticsList.replaceChildren(
    ...diagnostics.map((d) => {
      const item = document.createElement("li");
      item.className = `diagnostic ${d.severity}`;
      const where = document.createElement("a");
      where.textContent = `line ${d.line}`;
      where.href = "#";
      where.addEventListener("click", (event) => {
        event.preventDefault();
        host.postMessage({ type: "reveal", node: "", line: d.line, col: d.col, end_line: d.end_line, end_col: d.end_col });
      });
      const text = document.createElement("span");
      text.textContent = ` ${d.severity}: ${d.message}` + (d.explanation ? ` — ${d.explanation}` : "") + (d.fix ? ` Fix: ${d.fix}` : "");
      item.append(where, text);
      return item;
    }),
  );
  diagnosticsList.hidden = diagnostics.length === 0;
}

function showReport(next: GraphReport): void {
  // the same class and level again (the file was edited): keep where the user has panned and zoomed
  const sameGraph = report !== undefined && report.class === next.class && report.level === next.level;
  report = next;
  document.body.dataset.state = next.ok ? "ok" : "failed";
  title.textContent = `${next.class}`;
  showLevels(next.levels.length ? next.levels : [next.level], next.level);
  showDiagnostics(next.diagnostics ?? []);
  byId("printout").textContent = next.printout;
  byId("code").textContent = next.code;
  byId("table").textContent = next.table;
  const count = next.graph.nodes.length;
  if (next.ok) {
    showMessage(next.message ?? "", "info");
  } else {
    showMessage(next.message || `${next.level}: ${next.class} could not be traced at this level — see the problems below.`, "error");
  }
  if (count > 0) {
    view.draw(layoutGraph(next.graph.nodes, next.graph.edges), sameGraph);
  } else {
    view.draw({ width: 0, height: 0, nodes: [], edges: [] });
  }
  document.body.dataset.nodes = String(count);
  document.body.dataset.draws = String(++draws);
  applySearch();
  view.highlight("cursor", nodesOnLine(next.graph.nodes, cursorLine));
}

function applySearch(): void {
  matches = report ? matchingNodes(report.graph.nodes, searchBox.value) : [];
  matchIndex = -1;
  view.highlight("match", matches);
  searchCount.textContent = searchBox.value.trim() ? `${matches.length} match${matches.length === 1 ? "" : "es"}` : "";
}

function handle(data: HostToPage): void {
  switch (data.type) {
    case "report":
      showReport(data.report);
      break;
    case "loading":
      showMessage(`Tracing ${data.className || "the module"} (${data.level})…`, "loading");
      break;
    case "error":
      showMessage(data.message, "error");
      break;
    case "cursor":
      cursorLine = data.line;
      view.highlight("cursor", report ? nodesOnLine(report.graph.nodes, cursorLine) : []);
      break;
  }
}

window.addEventListener("message", (event: MessageEvent) => handle(event.data as HostToPage));
byId<HTMLButtonElement>("fit").addEventListener("click", () => view.fit(true));
levelSelect.addEventListener("change", () => host.postMessage({ type: "level", level: levelSelect.value }));
searchBox.addEventListener("input", applySearch);
searchBox.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && matches.length > 0) {
    matchIndex = (matchIndex + 1) % matches.length;
    view.centreOn(matches[matchIndex]);
  }
});
for (const tab of document.querySelectorAll<HTMLButtonElement>(".tab")) {
  tab.addEventListener("click", () => {
    const showGraph = tab.dataset.tab === "graph";
    graphSection.hidden = !showGraph;
    textSection.hidden = showGraph;
    document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t === tab));
  });
}
host.postMessage({ type: "ready" });

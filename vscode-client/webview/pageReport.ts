// What the page adds to a report before drawing it: the failure marker of a level that failed part
// way, the level switcher's choices and the list of its problems. Pure apart from creating elements.
import type { GraphEdge, GraphNode, GraphReport, ReportDiagnostic } from "../src/core/report";

export const FAILURE_ID = "fxlens_failure";

/** A level that failed with a partial graph: a marker node after the last node that traced, naming the line and the reason. */
export function failureNode(report: GraphReport): { node: GraphNode; edges: GraphEdge[] } | undefined {
  const error = (report.diagnostics ?? []).find((d) => d.severity === "error");
  const nodes = report.graph.nodes;
  if (report.ok || !error || nodes.length === 0) {
    return undefined;
  }
  const last = [...nodes].reverse().find((n) => n.op !== "output");
  const node: GraphNode = {
    id: FAILURE_ID, op: "failure", target: error.category, shape: "", dtype: null, scope: "",
    label: `✖ fails at line ${error.line}\n${error.category}\n${error.message.split("\n")[0]}`,
    line: error.line, col: error.col, end_line: error.end_line, end_col: error.end_col,
  };
  return { node, edges: last ? [{ source: last.id, target: FAILURE_ID }] : [] };
}

/** The split view's choices: no second level, or any level of the class (`chosen` selected). */
export function splitChoices(report: GraphReport, chosen: string | undefined): HTMLOptionElement[] {
  const none = document.createElement("option");
  none.value = "";
  none.textContent = "none";
  const levels = levelChoices(report);
  [none, ...levels].forEach((option) => (option.selected = option.value === (chosen ?? "")));
  return [none, ...levels];
}

/** Every level fxlens knows (newer servers list them), the ones not traced yet marked as such. */
export function levelChoices(report: GraphReport): HTMLOptionElement[] {
  const offered = report.level_info?.length
    ? report.level_info
    : (report.levels.length ? report.levels : [report.level]).map((name) => ({ name, what: "", traced: true }));
  return offered.map((level) => {
    const option = document.createElement("option");
    option.value = level.name;
    option.textContent = level.traced || level.name === report.level ? level.name : `${level.name} (trace on request)`;
    option.title = level.what;
    option.selected = level.name === report.level;
    return option;
  });
}

/** The level's problems as a list over the graph, each with a link to its line. */
export function showDiagnostics(list: HTMLUListElement, diagnostics: ReportDiagnostic[], reveal: (d: ReportDiagnostic) => void): void {
  list.replaceChildren(
    ...diagnostics.map((d) => {
      const item = document.createElement("li");
      item.className = `diagnostic ${d.severity}`;
      const where = document.createElement("a");
      where.textContent = `line ${d.line}`;
      where.href = "#";
      where.addEventListener("click", (event) => {
        event.preventDefault();
        reveal(d);
      });
      const text = document.createElement("span");
      text.textContent = ` ${d.severity}: ${d.message}` + (d.explanation ? ` — ${d.explanation}` : "") + (d.fix ? ` Fix: ${d.fix}` : "");
      item.append(where, text);
      return item;
    }),
  );
  list.hidden = diagnostics.length === 0;
}

// A pass preview: the server's `fxlens.runPass` result (render/pass_view.py), and how the graph view
// draws it: the graph after the pass, its added / removed / retargeted nodes marked, the verdict beside.
import type { GraphEdge, GraphNode, GraphReport, ReportDiagnostic } from "./report";

export const SERVER_RUN_PASS = "fxlens.runPass";

export interface PassChange {
  change: string; // "added" | "removed" | "retargeted"
  name: string;
  op: string;
  target: string;
  before?: string;
  replaces?: string[];
  line?: number | null;
}

export interface OutputCheck {
  index: number;
  path: string;
  equal: boolean;
  max_abs_diff?: number | null;
  sqnr_db?: number | null;
  where?: string;
}

export interface PassProof {
  verdict: string;
  why_not?: string;
  draws?: number;
  rtol?: number;
  atol?: number;
  tensors?: string;
  first_difference?: string;
  outputs?: OutputCheck[];
  converted?: PassProof | null;
}

export interface PassRunReport {
  pass_name: string;
  class_name: string;
  ok: boolean;
  counts_before: Record<string, number>;
  counts_after: Record<string, number>;
  changes: PassChange[];
  diff: string;
  code_after: string;
  proof: PassProof;
  diagnostics: ReportDiagnostic[];
  seconds?: number;
}

export interface PassPreview {
  uri: string;
  ok: boolean;
  class: string | null;
  pass: string | null;
  verdict: string | null;
  markdown: string;
  report: PassRunReport | null;
  graph: { nodes: GraphNode[]; edges: GraphEdge[] };
  message: string;
}

/** What the view runs: the class of a document, a pass, and the open document defining a user pass. */
export interface PassTarget {
  uri: string;
  className: string;
  passName: string;
  passUri: string | undefined;
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value ? value : undefined);

/** The code action's `fxlens.runPass` arguments `[uri, className, passName, passUri?, toDocument?]`. */
export function passTarget(args: readonly unknown[]): PassTarget | undefined {
  const [uri, className, passName, passUri] = args.map(text);
  return uri && className && passName ? { uri, className, passName, passUri } : undefined;
}

/** The arguments the view sends: no read-only markdown document, the view shows the preview itself. */
export function runPassArguments(target: PassTarget): unknown[] {
  return [target.uri, target.className, target.passName, target.passUri ?? target.uri, false];
}

/** Why a server answer cannot be drawn as a pass preview, or undefined when it can. */
export function passProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) {
    return "the server returned no pass preview";
  }
  const preview = value as Partial<PassPreview>;
  if (!preview.report || typeof preview.class !== "string") {
    return preview.message || "the pass did not run";
  }
  if (!preview.graph || !Array.isArray(preview.graph.nodes) || !Array.isArray(preview.graph.edges)) {
    return "the server's pass preview has no graph";
  }
  return undefined;
}

/** The graph view's report for a preview: the fx graph after the pass (removed nodes included, marked). */
export function passGraphReport(preview: PassPreview): GraphReport {
  const report = preview.report!;
  return {
    uri: preview.uri,
    class: preview.class ?? report.class_name,
    level: "fx",
    levels: ["fx"],
    ok: report.ok,
    printout: report.diff,
    code: report.code_after,
    table: "",
    diagnostics: report.diagnostics ?? [],
    graph: preview.graph,
    message: preview.message || (report.ok ? "" : `the pass ${report.pass_name} failed on ${report.class_name}: see the problems below`),
  };
}

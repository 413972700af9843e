// A pass preview: the server's `fxlens.runPass` result (render/pass_view.py), and how the graph view
// draws it: the graph after the pass, its added / removed / retargeted nodes marked, the verdict beside.
import { SEE_PROBLEMS } from "./report";
import type { GraphEdge, GraphNode, GraphReport, ReportDiagnostic } from "./report";

export const SERVER_RUN_PASS = "fxlens.runPass";
export const SERVER_PASS_CHOICES = "fxlens.passChoices";
// the palette's "fxlens: Run graph pass…": pick a class of the file, then a pass
export const CLIENT_RUN_GRAPH_PASS = "fxlens.runGraphPass";

export interface PassChange {
  change: string; // "added" | "removed" | "retargeted" | "changed"
  name: string;
  op: string;
  target: string;
  before?: string;
  replaces?: string[]; // the nodes it stands for, gone after the pass
  took_users_of?: string[]; // nodes still there whose users it took over (it was inserted after them)
  detail?: string; // changed: what changed in its module ("module replaced: weight, bias changed")
  line?: number | null;
}

/** A change in words after the node's name, as the preview's markdown says it (render/pass_text.py's change_line). */
export function changeWords(change: PassChange): string {
  const where = change.line ? ` (line ${change.line})` : "";
  if (change.change === "retargeted") {
    return `${change.before} → ${change.op}[${change.target}]${where}`;
  }
  const found = [
    change.replaces?.length ? `in place of ${change.replaces.join(", ")}` : "",
    change.took_users_of?.length ? `taking over the users of ${change.took_users_of.join(", ")}` : "",
  ].filter(Boolean);
  return `${change.op}[${change.target}]${where}${change.detail ? ` — ${change.detail}` : ""}${found.length ? `, ${found.join(", ")}` : ""}`;
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
    message: preview.message || (report.ok ? "" : `the pass ${report.pass_name} failed on ${report.class_name}: ${SEE_PROBLEMS}`),
  };
}

/** What fxlens.passChoices says a pass can run on in a document, and which passes there are. */
export interface PassChoices {
  classes: { name: string; runnable: boolean; why: string }[];
  passes: { name: string; kind: string; what: string; passUri: string; file: string }[];
}

const list = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value) ? value.filter((item): item is Record<string, unknown> => typeof item === "object" && item !== null) : [];

/** The server's answer, whatever it sent: malformed entries are left out. */
export function parsePassChoices(value: unknown): PassChoices {
  const data = typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  return {
    classes: list(data.classes).filter((c) => text(c.name)).map((c) => ({ name: c.name as string, runnable: c.runnable === true, why: text(c.why) ?? "" })),
    passes: list(data.passes).filter((p) => text(p.name) && text(p.passUri)).map((p) => ({
      name: p.name as string, kind: text(p.kind) ?? "builtin", what: text(p.what) ?? "", passUri: p.passUri as string, file: text(p.file) ?? "",
    })),
  };
}

export interface Pick<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

/** The classes to pick from, the one at the cursor first; those that cannot be built last, saying why.
 * `problem`: there is nothing to pick, and why. */
export function classPicks(choices: PassChoices, atCursor: string | undefined): { items: Pick<{ name: string; why: string }>[]; problem?: string } {
  if (choices.classes.length === 0) {
    return { items: [], problem: "no Module class has been traced in this file yet" };
  }
  const rank = (c: PassChoices["classes"][number]) => (c.runnable ? (c.name === atCursor ? 0 : 1) : 2);
  const ordered = [...choices.classes].sort((a, b) => rank(a) - rank(b));
  if (!ordered[0].runnable) {
    return { items: [], problem: `no class of this file can be built to run a pass on: ${ordered.map((c) => c.why).join("; ")}` };
  }
  return {
    items: ordered.map((c) => ({
      label: c.name,
      description: c.runnable ? (c.name === atCursor ? "at the cursor" : undefined) : "cannot be built",
      detail: c.runnable ? undefined : c.why,
      value: { name: c.name, why: c.runnable ? "" : c.why },
    })),
  };
}

/** The passes to pick from: the built-ins, then the workspace's own, each with where it comes from. */
export function passPicks(choices: PassChoices): Pick<{ name: string; passUri: string }>[] {
  return choices.passes.map((p) => ({
    label: p.name,
    description: p.kind === "builtin" ? "built-in" : p.file || "your pass",
    detail: p.what || undefined,
    value: { name: p.name, passUri: p.passUri },
  }));
}

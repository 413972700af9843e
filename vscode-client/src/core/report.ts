// The `fxlens.showGraph` result as the language server sends it. Report coordinates are Python's:
// 1-based lines, 0-based UTF-8 byte columns (converted only in positions.ts).

// where the graph view lists a report's problems (under the toolbar), in the words of every text that points there
export const SEE_PROBLEMS = "see the problems listed under the toolbar";

export interface ReportSpan {
  line: number | null;
  col: number | null;
  end_line: number | null;
  end_col: number | null;
}

export interface GraphNode extends ReportSpan {
  id: string;
  op: string;
  target: string;
  shape: string;
  dtype: string | null;
  label: string;
  scope: string;
  // what the details pane and search read; absent in older servers' payloads
  function?: string | null;
  text?: string;
  num_users?: number;
  flops?: number | null;
  overload?: string | null;
  value?: string | null;
  graph?: number | null;
  phase?: string | null;
  // a pass preview: the node the pass adds or removes
  change?: string;
  // the inductor level's kernel that runs the node (aten, core-aten and inductor views), and its index
  // among the class's kernels (its colour)
  kernel?: string | null;
  kernel_colour?: number | null;
  [extra: string]: unknown;
}

/** A submodule instance the fx tracer saw called: its class and the span of the call. */
export interface ScopeInfo {
  class?: string;
  line?: number;
  col?: number;
  end_line?: number;
  end_col?: number;
}

export interface LevelOffered {
  name: string;
  what: string;
  traced: boolean;
}

export interface GraphEdge {
  source: string;
  target: string;
}

export interface ReportDiagnostic {
  line: number;
  col: number;
  end_line: number;
  end_col: number;
  severity: string;
  category: string;
  message: string;
  explanation: string;
  fix: string;
}

export interface GraphReport {
  uri: string;
  class: string;
  level: string;
  levels: string[];
  ok: boolean;
  printout: string;
  code: string;
  table: string;
  diagnostics: ReportDiagnostic[];
  graph: { nodes: GraphNode[]; edges: GraphEdge[] };
  // every level fxlens knows, traced for this class or not (newer servers)
  level_info?: LevelOffered[];
  // the forward's own inputs by name (the other placeholders of an ATen level are lifted parameters)
  inputs?: string[];
  // submodule instance path -> class and call span
  scopes?: Record<string, ScopeInfo>;
  // ATen levels: per target, its schema and sibling overloads
  schemas?: Record<string, { schema?: string; overloads?: string[] }>;
  // why there is no graph (no such class, level not traced) or a note about the level
  message?: string;
  // where the level sits on the ladder, read off its opcodes ("above aot_autograd (module level)")
  rung?: string;
}

/** Checks the parts of a server answer the graph view relies on; returns a reason when it is unusable. */
export function reportProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) {
    return "the server returned no graph";
  }
  const report = value as Partial<GraphReport>;
  if (typeof report.class !== "string" || typeof report.level !== "string") {
    return report.message || "the server's graph has no class or level";
  }
  if (!report.graph || !Array.isArray(report.graph.nodes) || !Array.isArray(report.graph.edges)) {
    return "the server's graph has no nodes or edges";
  }
  return undefined;
}

// The `fxlens.showGraph` result as the language server sends it. Report coordinates are Python's:
// 1-based lines, 0-based UTF-8 byte columns (converted only in positions.ts).

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
  // a graph after a pass (fxlens.runPass): what the pass did to this node
  change?: "added" | "removed" | "retargeted" | null;
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
  // why there is no graph (no such class, level not traced) or a note about the level
  message?: string;
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

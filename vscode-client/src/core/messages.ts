// Messages between the extension host (graphPanel.ts) and the graph page (webview/main.ts).
import type { PassPreview } from "./passPreview";
import type { GraphReport } from "./report";

export type HostToPage =
  // `pass`: the report is the graph after that pass, drawn with the pass's preview beside it
  | { type: "report"; report: GraphReport; pass?: PassPreview }
  | { type: "error"; message: string; level?: string }
  | { type: "loading"; className: string; level: string }
  // the 1-based report line of the editor's cursor, null when the cursor is in another file
  | { type: "cursor"; line: number | null }
  // the level drawn beside the main one (the split view); null closes it, `message` says why it has no graph
  | { type: "split"; report: GraphReport | null; message?: string };

export type PageToHost =
  | { type: "ready" }
  | { type: "level"; level: string }
  // leave a pass preview for the class's own graph
  | { type: "closePass" }
  // draw this level of the class beside the main one (null: no split)
  | { type: "split"; level: string | null }
  // a span to select in the editor: report coordinates; a missing end selects to the end of the line.
  // `node` names the node clicked, or the module instance path of a group (`group` true)
  | { type: "reveal"; node: string; line: number; col: number | null; end_line: number | null; end_col: number | null; group?: boolean }
  // the drawing to save: SVG text, or a PNG as base64
  | { type: "export"; format: "svg" | "png"; name: string; data: string };

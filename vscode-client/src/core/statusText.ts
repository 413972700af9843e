// What the status bar item says, from the extension's own state and the server's fxlens/status.

export type ServerState = "starting" | "idle" | "tracing" | "error" | "stopped";

export interface StatusInput {
  server: ServerState;
  message: string;
  trusted: boolean;
  // set when fxlens cannot run at all (no interpreter, no torch): the reason, shown instead
  unavailable?: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  isError: boolean;
}

export const UNTRUSTED_REASON =
  "This workspace is not trusted, so fxlens runs none of its code and traces nothing. Trust the workspace to see graphs.";

export function statusView(input: StatusInput): StatusView {
  const clickHint = "\n\nClick for the fxlens log.";
  if (input.unavailable) {
    return { text: "$(warning) fxlens: unavailable", tooltip: input.unavailable + clickHint, isError: true };
  }
  if (!input.trusted) {
    return { text: "$(shield) fxlens: restricted", tooltip: UNTRUSTED_REASON + clickHint, isError: false };
  }
  const detail = input.message ? `: ${input.message}` : "";
  switch (input.server) {
    case "starting":
      return { text: "$(loading~spin) fxlens", tooltip: `fxlens is starting${detail}` + clickHint, isError: false };
    case "tracing":
      return { text: "$(sync~spin) fxlens: tracing", tooltip: `fxlens is tracing${detail}` + clickHint, isError: false };
    case "error":
      return { text: "$(error) fxlens", tooltip: `fxlens error${detail}` + clickHint, isError: true };
    case "stopped":
      return { text: "$(debug-stop) fxlens: stopped", tooltip: `the fxlens server stopped${detail}` + clickHint, isError: true };
    default:
      return { text: "$(check) fxlens", tooltip: `fxlens is ready${detail}` + clickHint, isError: false };
  }
}

/** Accepts the server's fxlens/status params, defending against a malformed notification. */
export function parseServerStatus(params: unknown): { state: ServerState; message: string } {
  const value = (params ?? {}) as { state?: unknown; message?: unknown };
  const state = value.state === "tracing" || value.state === "error" || value.state === "idle" ? value.state : "idle";
  return { state, message: typeof value.message === "string" ? value.message : "" };
}

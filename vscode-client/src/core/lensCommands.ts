// The server's "Show FX graph" lens names the server command fxlens.showGraph, which only returns
// data; the client redirects it to its own command, which fetches that data and opens the view.

export const SERVER_SHOW_GRAPH = "fxlens.showGraph";
export const CLIENT_SHOW_GRAPH = "fxlens.showGraphView";

interface LensLike {
  command?: { command: string; title: string; arguments?: unknown[] };
}

export function redirectLens<T extends LensLike>(lens: T): T {
  if (lens.command?.command === SERVER_SHOW_GRAPH) {
    lens.command = { ...lens.command, command: CLIENT_SHOW_GRAPH };
  }
  return lens;
}

export function redirectLenses<T extends LensLike>(lenses: T[] | null | undefined): T[] | null | undefined {
  return lenses?.map(redirectLens);
}

// The phases of opening a graph, as the page's performance measures (`fxlens:hierarchy`, `fxlens:layout`,
// …): the view's benchmark (bench/graph_view.mjs) reads them to say where an open's time goes, and a
// person sees them in the webview devtools' performance panel. Each report starts a fresh set.
const PREFIX = "fxlens:";

export function timed<T>(phase: string, run: () => T): T {
  const start = performance.now();
  try {
    return run();
  } finally {
    performance.measure(PREFIX + phase, { start });
  }
}

export async function timedAsync<T>(phase: string, run: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await run();
  } finally {
    performance.measure(PREFIX + phase, { start });
  }
}

/** Records a phase that began at `start` (a performance.now() time) and ends now. */
export function since(phase: string, start: number): void {
  performance.measure(PREFIX + phase, { start });
}

/** Forgets the last open's phases (a report opens another graph). */
export function clearPhases(): void {
  performance.clearMeasures();
}

// Runs ELK off the UI thread: its worker script (elkjs's own, bundled into main.js as text) starts
// from a blob: URL, the only kind of worker a webview's strict CSP admits (`worker-src blob:`).
//
// A layout can be cancelled: ELK cannot be interrupted inside its worker, so the worker is terminated
// and the next layout gets a fresh one. Without that, a layout that never ends (thousands of boxes)
// holds the worker, and every layout asked for after it (another level, a smaller graph) waits behind.
import ELK from "elkjs/lib/elk-api";
import type { ElkNode } from "elkjs/lib/elk-api";
import workerSource from "elk-worker-source";

export type LayoutOutcome = { result: ElkNode } | { overBudget: true } | { cancelled: true };

export class LayoutRunner {
  private readonly url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
  private elk: InstanceType<typeof ELK> | undefined;
  // the layout running now: cancelling it settles its promise at once
  private running: { settle(outcome: LayoutOutcome): void } | undefined;

  private engine(): InstanceType<typeof ELK> {
    this.elk ??= new ELK({ workerUrl: this.url, workerFactory: (workerUrl) => new Worker(workerUrl!) });
    return this.elk;
  }

  /** Stops the running layout (its promise answers `cancelled`); the worker is replaced. */
  cancel(): void {
    const running = this.running;
    if (!running) {
      return;
    }
    this.running = undefined;
    this.elk?.terminateWorker();
    this.elk = undefined;
    running.settle({ cancelled: true });
  }

  /** Lays out `graph`; past `budgetMs` the layout is stopped (`overBudget`). A newer layout cancels this one. */
  layout(graph: ElkNode, budgetMs: number): Promise<LayoutOutcome> {
    this.cancel();
    return new Promise<LayoutOutcome>((resolve, reject) => {
      let done = false;
      const finish = (answer: () => void) => {
        if (!done) {
          done = true;
          clearTimeout(timer);
          this.running === job && (this.running = undefined);
          answer();
        }
      };
      const job = { settle: (outcome: LayoutOutcome) => finish(() => resolve(outcome)) };
      const timer = setTimeout(() => {
        if (this.running === job) {
          this.running = undefined;
          this.elk?.terminateWorker();
          this.elk = undefined;
        }
        job.settle({ overBudget: true });
      }, budgetMs);
      this.running = job;
      // a terminated worker's layout may still answer or fail: the outcome is settled by then
      this.engine().layout(graph).then(
        (result) => job.settle({ result }),
        (error) => finish(() => reject(error)),
      );
    });
  }
}

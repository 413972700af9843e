// Runs ELK off the UI thread: its worker script (elkjs's own, bundled into main.js as text) starts
// from a blob: URL, the only kind of worker a webview's strict CSP admits (`worker-src blob:`).
import ELK from "elkjs/lib/elk-api";
import type { ElkNode } from "elkjs/lib/elk-api";
import workerSource from "elk-worker-source";

export class LayoutRunner {
  private readonly elk: InstanceType<typeof ELK>;
  // each layout asked for gets a number: an answer to an older request is dropped
  private latest = 0;

  constructor() {
    const url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
    this.elk = new ELK({ workerUrl: url, workerFactory: (workerUrl) => new Worker(workerUrl!) });
  }

  /** Lays out `graph`; undefined when a newer layout was asked for meanwhile. */
  async layout(graph: ElkNode): Promise<ElkNode | undefined> {
    const request = ++this.latest;
    const result = await this.elk.layout(graph);
    return request === this.latest ? result : undefined;
  }
}

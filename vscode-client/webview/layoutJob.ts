// One layout of what is open, that always ends: ELK in its worker under a time budget, with the
// progress shown while it runs; past the budget (or for more boxes than ELK lays out in time) the
// layered drawing without edge routing (quickLayout.ts). A newer layout cancels the running one.
import type { ElkNode } from "elkjs/lib/elk-api";
import { LayoutRunner } from "./elkRunner";
import { Hierarchy } from "./hierarchy";
import { layersCrossed, quickLayout } from "./quickLayout";
import { timed, timedAsync } from "./timing";
import { Drawing, elkGraph, placeLayout } from "./visible";

// ELK's layered layout with orthogonal routing took ~1 s for 600 boxes here and minutes for 2,000
export const ELK_MAX_BOXES = 1500;
export const LAYOUT_BUDGET_MS = 4000;
const TICK_MS = 250;
// Past this many edges, ELK is asked for less: one crossing-minimisation sweep and no model order.
// GPT-2 48's collapsed backward (61 boxes, 214 edges, 48 of them long, into the gradients' box) took
// 4.5 s with the defaults and 0.76 s so; small graphs keep the tidier drawing.
const MANY_EDGES = 150;
const QUICKER = { "elk.layered.thoroughness": "1", "elk.layered.considerModelOrder.strategy": "NONE" };
// Long edges cost ELK most (layersCrossed): past LEAN_CROSSINGS it keeps the boxes in graph order (no
// crossing minimisation) and places them simply. That drawing reads better too: the stack of blocks a
// straight column, the long edges bundled beside it (GPT-2 12's collapsed backward, 400 crossings:
// 1.9 s -> 0.55 s on 2 loaded cores; GPT-2 48's, 4,000: 2.7 s -> 0.6 s). Past QUICK_CROSSINGS even
// that outruns the budget (the 70B-shaped model's backward, 10,000: 2.7 s warm, more in a cold
// worker): the layered drawing at once, not after the budget ran out.
export const LEAN_CROSSINGS = 300;
export const QUICK_CROSSINGS = 6000;
const LEAN = { ...QUICKER, "elk.layered.crossingMinimization.strategy": "NONE", "elk.layered.nodePlacement.strategy": "SIMPLE" };

/** Sets `options` on `node` and every group inside it. */
function withOptions(node: ElkNode, options: Record<string, string>): void {
  node.layoutOptions = { ...node.layoutOptions, ...options };
  (node.children ?? []).filter((child) => child.children?.length).forEach((child) => withOptions(child, options));
}

export interface Laid {
  drawing: Drawing;
  boxes: number;
  how: "elk" | "quick";
  // why the cheaper drawing was made, for the page to say
  note: string;
}

export class LayoutJobs {
  private readonly runner = new LayoutRunner();
  budgetMs = LAYOUT_BUDGET_MS;

  /** `progress(text)` while it runs, `progress(undefined)` when it ends. */
  constructor(private readonly progress: (text: string | undefined) => void) {}

  cancel(): void {
    this.runner.cancel();
    this.progress(undefined);
  }

  /** Lays out `hierarchy` with `expanded` open; undefined when a newer layout (or cancel) replaced it. */
  async run(hierarchy: Hierarchy, expanded: ReadonlySet<string>, what: string): Promise<Laid | undefined> {
    const { graph, items } = timed("graph", () => elkGraph(hierarchy, expanded));
    const boxes = items.size;
    const crossed = timed("crossings", () => layersCrossed(graph));
    if (crossed > LEAN_CROSSINGS) {
      // on every open group too: ELK refuses a group whose crossing minimisation differs from the root's
      withOptions(graph, LEAN);
    } else if ((graph.edges?.length ?? 0) > MANY_EDGES) {
      graph.layoutOptions = { ...graph.layoutOptions, ...QUICKER };
    }
    const quick = (note: string): Laid => ({ drawing: timed("quick layout", () => placeLayout(quickLayout(graph), items)), boxes, how: "quick", note });
    if (boxes > ELK_MAX_BOXES) {
      this.runner.cancel();
      return quick(`${what}: ${boxes.toLocaleString("en")} boxes are open, more than the full layout draws in time: drawn in layers, without edge routing. Collapse groups for the full layout.`);
    }
    if (crossed > QUICK_CROSSINGS) {
      this.runner.cancel();
      const edges = (graph.edges?.length ?? 0).toLocaleString("en");
      return quick(`${what}: ${edges} edges, many of them long (they pass ${crossed.toLocaleString("en")} rows of boxes in all), more than the full layout routes in time: drawn in layers, without edge routing.`);
    }
    const started = performance.now();
    // a test stands in a short budget through the page's dataset (data-layout-budget-ms on <body>)
    const budget = Number(document.body.dataset.layoutBudgetMs) || this.budgetMs;
    const say = () => this.progress(`Laying out ${what}: ${boxes.toLocaleString("en")} boxes… ${((performance.now() - started) / 1000).toFixed(1)} s of at most ${(budget / 1000).toFixed(0)} s`);
    say();
    const ticker = setInterval(say, TICK_MS);
    try {
      const outcome = await timedAsync("layout", () => this.runner.layout(graph, budget));
      if ("cancelled" in outcome) {
        return undefined;
      }
      this.progress(undefined);
      if ("overBudget" in outcome) {
        return quick(`The full layout of ${what} (${boxes.toLocaleString("en")} boxes) ran past its ${(budget / 1000).toFixed(0)} s budget and was stopped: drawn in layers, without edge routing. Collapse groups for the full layout.`);
      }
      return { drawing: timed("place", () => placeLayout(outcome.result, items)), boxes, how: "elk", note: "" };
    } finally {
      clearInterval(ticker);
    }
  }
}

// One layout of what is open, that always ends: ELK in its worker under a time budget, with the
// progress shown while it runs; past the budget (or for more boxes than ELK lays out in time) the
// layered drawing without edge routing (quickLayout.ts). A newer layout cancels the running one.
import { LayoutRunner } from "./elkRunner";
import { Hierarchy } from "./hierarchy";
import { quickLayout } from "./quickLayout";
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
    const { graph, items } = elkGraph(hierarchy, expanded);
    const boxes = items.size;
    if ((graph.edges?.length ?? 0) > MANY_EDGES) {
      graph.layoutOptions = { ...graph.layoutOptions, ...QUICKER };
    }
    const quick = (note: string): Laid => ({ drawing: placeLayout(quickLayout(graph), items), boxes, how: "quick", note });
    if (boxes > ELK_MAX_BOXES) {
      this.runner.cancel();
      return quick(`${what}: ${boxes.toLocaleString("en")} boxes are open, more than the full layout draws in time: drawn in layers, without edge routing. Collapse groups for the full layout.`);
    }
    const started = performance.now();
    // a test stands in a short budget through the page's dataset (data-layout-budget-ms on <body>)
    const budget = Number(document.body.dataset.layoutBudgetMs) || this.budgetMs;
    const say = () => this.progress(`Laying out ${what}: ${boxes.toLocaleString("en")} boxes… ${((performance.now() - started) / 1000).toFixed(1)} s of at most ${(budget / 1000).toFixed(0)} s`);
    say();
    const ticker = setInterval(say, TICK_MS);
    try {
      const outcome = await this.runner.layout(graph, budget);
      if ("cancelled" in outcome) {
        return undefined;
      }
      this.progress(undefined);
      if ("overBudget" in outcome) {
        return quick(`The full layout of ${what} (${boxes.toLocaleString("en")} boxes) ran past its ${(budget / 1000).toFixed(0)} s budget and was stopped: drawn in layers, without edge routing. Collapse groups for the full layout.`);
      }
      return { drawing: placeLayout(outcome.result, items), boxes, how: "elk", note: "" };
    } finally {
      clearInterval(ticker);
    }
  }
}

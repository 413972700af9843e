// The graph view at scale, in headless Chromium: real payloads of the bench models (fx, aten, backward,
// dynamo), from the report reaching the page to a drawn, interactive graph (collapsed), and opening one
// block. "how" says which drawing it got: ELK's full layout, or the layered one without edge routing
// (past the layout budget, or too many open boxes).
//
//     node bench/graph_view.mjs [--levels fx,aten,backward,dynamo] [--traces DIR] [model ...]
//                                          (after `npm run build` in vscode-client; writes tables to stdout)
//
// --traces DIR keeps the models' traces there for the next run (graph_view_reports.py). A second
// table says where the first open's time goes, from the page's own measures (webview/timing.ts).
//
// Each open is timed in the page: posting the report (structured-cloned, as VS Code's postMessage
// does) -> hierarchy -> ELK layout in the worker -> SVG in the DOM -> the next frame painted. "first"
// is a fresh page (the layout worker starting cold); "again" is the median of reopening it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openPage } from "../vscode-client/test/webview/page.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const BLOCKS = { "gpt2-12": "blocks.5", "gpt2-48": "blocks.20", llama70b: "layers.40" };
const argv = process.argv.slice(2);
const levelsAt = argv.indexOf("--levels");
const LEVELS = levelsAt >= 0 ? argv.splice(levelsAt, 2)[1].split(",") : ["fx", "aten", "backward", "dynamo"];
const tracesAt = argv.indexOf("--traces");
const TRACES = tracesAt >= 0 ? ["--traces", argv.splice(tracesAt, 2)[1]] : [];
const MODELS = Object.fromEntries((argv.length ? argv : Object.keys(BLOCKS)).map((key) => [key, BLOCKS[key]]));
const RUNS = 5;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const out = mkdtempSync(join(tmpdir(), "fxlens-view-bench-"));
execFileSync(process.env.FXLENS_TEST_PYTHON ?? "python3", [join(BENCH, "graph_view_reports.py"), out, "--time", "--levels", LEVELS.join(","), ...TRACES, ...Object.keys(MODELS)], { stdio: ["ignore", "ignore", "inherit"] });

/** In the page: post `name`'s report and resolve with the ms until the drawing after it is painted. */
function timeOpen(page, name) {
  return page.evaluate((name) => new Promise((resolve) => {
    const before = Number(document.body.dataset.draws ?? 0);
    const started = performance.now();
    const observer = new MutationObserver(() => {
      if (Number(document.body.dataset.draws ?? 0) > before) {
        observer.disconnect();
        const drawn = performance.now() - started;
        requestAnimationFrame(() => setTimeout(() => {
          // the page's phases of this open (webview/timing.ts), in ms
          const phases = {};
          for (const m of performance.getEntriesByType("measure").filter((m) => m.name.startsWith("fxlens:"))) {
            phases[m.name.slice(7)] = (phases[m.name.slice(7)] ?? 0) + m.duration;
          }
          phases.post = phases.receive === undefined ? undefined : performance.getEntriesByName("fxlens:receive")[0].startTime - started;
          resolve({ ms: performance.now() - started, drawn, phases, boxes: Number(document.body.dataset.boxes), how: document.body.dataset.layoutHow });
        }));
      }
    });
    observer.observe(document.body, { attributes: true });
    window.postMessage({ type: "report", report: window.__bench[name] }, "*");
  }), name);
}

function timeToggle(page, group) {
  return page.evaluate((group) => new Promise((resolve) => {
    const before = Number(document.body.dataset.draws ?? 0);
    const started = performance.now();
    const observer = new MutationObserver(() => {
      if (Number(document.body.dataset.draws ?? 0) > before) {
        observer.disconnect();
        requestAnimationFrame(() => setTimeout(() => resolve({ ms: performance.now() - started, boxes: Number(document.body.dataset.boxes), how: document.body.dataset.layoutHow })));
      }
    });
    observer.observe(document.body, { attributes: true });
    document.querySelector(`g.group[data-group="${group}"] text.toggle`).dispatchEvent(new MouseEvent("click", { bubbles: true }));
  }), group);
}

const rows = [];
for (const [key, block] of Object.entries(MODELS)) {
  const payloads = JSON.parse(readFileSync(join(out, `${key}.json`), "utf8"));
  const serverSeconds = JSON.parse(readFileSync(join(out, `${key}.timing.json`), "utf8"));
  for (const level of LEVELS.filter((l) => payloads[l])) {
    // a half-width panel of a 1400 px window, as the issue measured it
    const view = await openPage({ width: 700, height: 900 });
    await view.page.evaluate((reports) => (window.__bench = reports), { [level]: payloads[level], other: { ...payloads[level], class: "Other" } });
    const first = await timeOpen(view.page, level);
    const again = [];
    for (let i = 0; i < RUNS; i++) {
      await timeOpen(view.page, "other"); // another class in between: each open is a fresh graph
      again.push((await timeOpen(view.page, level)).ms);
    }
    const opens = [];
    let opened;
    const shown = (await view.page.locator(`g.group[data-group="${block}"]`).count()) ? block : `∇.${block}`;
    if (shown !== block) {
      await timeToggle(view.page, "∇"); // the backward level: the gradients' group open, the block inside it
    }
    for (let i = 0; i < RUNS; i++) {
      opened = await timeToggle(view.page, shown); // open
      opens.push(opened.ms);
      await timeToggle(view.page, shown); // and close again
    }
    // the gradients' copy of the block, at the backward level, is the one a person opens there
    rows.push({ key, level, phases: first.phases, drawn: first.drawn, nodes: payloads[level].graph.nodes.length, boxes: first.boxes, how: first.how, server: serverSeconds[level] * 1000, first: first.ms, again: median(again), block: shown, expand: median(opens), expandedBoxes: opened.boxes, expandedHow: opened.how });
    if (view.errors.length) {
      throw new Error(`${key} ${level}: ${view.errors.join("; ")}`);
    }
    await view.close();
  }
}
console.log("| model | level | nodes | boxes drawn collapsed | how | server payload | first open (cold worker) | open again | server + first open | expand one block | boxes drawn |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const how = r.how === r.expandedHow ? r.how : `${r.how}, then ${r.expandedHow}`;
  console.log(`| ${r.key} | ${r.level} | ${r.nodes} | ${r.boxes} | ${how} | ${r.server.toFixed(0)} ms | ${r.first.toFixed(0)} ms | ${r.again.toFixed(0)} ms | ${(r.server + r.first).toFixed(0)} ms | ${r.expand.toFixed(0)} ms (\`${r.block}\`) | ${r.expandedBoxes} |`);
}

// where the first open's time goes: posting (the structured clone), unpacking it, the module hierarchy,
// the ELK graph (and its layer count), the layout in the worker (or the layered drawing), placing the
// answer, drawing the SVG; "paint" is the time from the drawing to the next frame painted
const ms = (v) => (v === undefined ? "–" : `${v.toFixed(0)}`);
console.log("");
console.log("| model | level | how | post | receive | hierarchy | ELK graph | layout (worker) | layered drawing | place | draw | paint | first open |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const p = r.phases;
  console.log(`| ${r.key} | ${r.level} | ${r.how} | ${ms(p.post)} | ${ms(p.receive)} | ${ms(p.hierarchy)} | ${ms(p.graph === undefined ? undefined : p.graph + (p.crossings ?? 0))} | ${ms(p.layout)} | ${ms(p["quick layout"])} | ${ms(p.place)} | ${ms(p.draw)} | ${ms(r.first - r.drawn)} | ${ms(r.first)} |`);
}

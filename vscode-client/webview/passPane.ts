// The pass pane: beside the graph after a pass, what the pass did — the verdict of the proof, node
// counts by opcode before → after, the changed nodes (a click selects one in the graph) and the diff
// of the printouts.
import { changeWords } from "../src/core/passPreview";
import { SEE_PROBLEMS } from "../src/core/report";
import type { OutputCheck, PassPreview, PassProof, PassRunReport } from "../src/core/passPreview";

export interface PassLinks {
  selectNode(id: string): void;
  close(): void;
}

const VERDICT_WORDS: Record<string, string> = {
  equal: "the outputs are equal bit for bit",
  close: "the outputs agree within the tolerance",
  "changes results": "the pass changes results",
  quantized: "a quantization pass: the change is expected, given as numbers",
  "not run": "no proof",
};

function element<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (text !== undefined) {
    made.textContent = text;
  }
  if (className) {
    made.className = className;
  }
  return made;
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);

function number(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return "—";
  }
  return Number.isFinite(value) ? String(Number(value.toPrecision(4))) : value > 0 ? "∞" : "-∞";
}

function table(head: string[], rows: string[][], className: string): HTMLTableElement {
  const made = element("table", undefined, className);
  const header = made.createTHead().insertRow();
  head.forEach((cell) => header.append(element("th", cell)));
  const body = made.createTBody();
  for (const row of rows) {
    const line = body.insertRow();
    row.forEach((cell) => (line.insertCell().textContent = cell));
  }
  return made;
}

function countsTable(report: PassRunReport): HTMLTableElement {
  const ops = [...new Set([...Object.keys(report.counts_before), ...Object.keys(report.counts_after)])];
  const rows = ops.map((op) => {
    const before = report.counts_before[op] ?? 0;
    const after = report.counts_after[op] ?? 0;
    return [op, String(before), String(after) + (before === after ? "" : " ←")];
  });
  rows.push(["total", String(total(report.counts_before)), String(total(report.counts_after))]);
  return table(["opcode", "before", "after"], rows, "counts");
}

// the markdown preview's columns (render/pass_text.py), headed short enough to fit a half-width panel
const OUTPUT_HEAD = ["output", "equal", "max |diff|", "SQNR dB", "largest at"];

function outputRow(check: OutputCheck): string[] {
  const sqnr = check.equal ? "∞" : number(check.sqnr_db);
  return [check.path || String(check.index), check.equal ? "yes" : "no", number(check.max_abs_diff), sqnr, check.where ?? ""];
}

function proofPart(proof: PassProof, title: string): HTMLElement[] {
  const verdict = element("p", undefined, `verdict verdict-${proof.verdict.replace(/\s+/g, "-")}`);
  verdict.append(element("strong", `${title}: ${proof.verdict}`), ` — ${VERDICT_WORDS[proof.verdict] ?? ""}`);
  if (proof.verdict === "not run") {
    verdict.append(proof.why_not ? ` (${proof.why_not})` : "");
    return [verdict];
  }
  const parts: HTMLElement[] = [verdict];
  if (proof.first_difference) {
    parts.push(element("p", `first difference: ${proof.first_difference}`));
  }
  parts.push(element("p", `${proof.draws ?? 0} draws (${proof.tensors ?? ""}); close means allclose(rtol=${proof.rtol}, atol=${proof.atol})`, "muted"));
  const outputs = table(OUTPUT_HEAD, (proof.outputs ?? []).map(outputRow), "outputs");
  outputs.title = "torch.equal, the largest absolute difference and the SQNR of each output over the draws";
  parts.push(outputs);
  if (proof.converted) {
    parts.push(...proofPart(proof.converted, "after convert_fx (int8)"));
  }
  return parts;
}

function diffBlock(diff: string): HTMLPreElement {
  const block = element("pre", undefined, "diff");
  for (const line of diff.split("\n")) {
    const kind = line.startsWith("+++") || line.startsWith("---") ? "diff-file" : line.startsWith("+") ? "diff-add" : line.startsWith("-") ? "diff-del" : line.startsWith("@@") ? "diff-hunk" : "";
    block.append(element("span", `${line}\n`, kind));
  }
  return block;
}

export class PassPane {
  constructor(
    private readonly pane: HTMLElement,
    private readonly links: PassLinks,
  ) {}

  /** Shows a preview, or hides the pane when the view draws a class's own graph. */
  show(preview: PassPreview | undefined): void {
    const report = preview?.report;
    document.body.dataset.pass = report ? report.pass_name : "";
    if (!preview || !report) {
      this.pane.replaceChildren();
      this.pane.hidden = true;
      return;
    }
    const close = element("button", "Back to the graph", "tool");
    close.title = `Show ${report.class_name}'s own graph`;
    close.addEventListener("click", () => this.links.close());
    const heading = element("h3", `${report.pass_name} on ${report.class_name}`);
    const counts = element("p", report.ok ? `${total(report.counts_before)} → ${total(report.counts_after)} nodes` : `the pass failed: ${SEE_PROBLEMS}`, "headline");
    const parts: HTMLElement[] = [heading, counts, close];
    if (report.ok) {
      parts.push(...proofPart(report.proof, "verdict"), countsTable(report), ...this.changes(report));
      if (report.diff) {
        parts.push(element("h4", "Printout, before → after"), diffBlock(report.diff));
      }
    }
    this.pane.replaceChildren(...parts);
    this.pane.hidden = false;
  }

  private changes(report: PassRunReport): HTMLElement[] {
    if (report.changes.length === 0) {
      return [element("h4", "No node changed")];
    }
    const list = element("ul", undefined, "changes");
    for (const change of report.changes) {
      const item = element("li", undefined, `change-${change.change}`);
      const name = element("a", change.name);
      name.href = "#";
      name.addEventListener("click", (event) => {
        event.preventDefault();
        this.links.selectNode(change.name);
      });
      item.append(`${change.change} `, name, `: ${changeWords(change)}`);
      list.append(item);
    }
    return [element("h4", "Changed nodes"), list];
  }
}

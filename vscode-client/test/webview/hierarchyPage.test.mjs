// The graph page on real engine reports of the bench models (bench/graph_view_reports.py runs
// `fxlens graph --json` and the server's payload renderer): module groups drawn collapsed, a block
// opened, a search into a collapsed group, a click that reveals the right span, and both themes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact } from "../browser.mjs";
import { enginePayloads, openPage, toolbarControl, useLightTheme, waitForDraw } from "./page.mjs";

let reports, view, page;
const draws = () => page.evaluate(() => Number(document.body.dataset.draws));
// groups lie wherever the layout put them, possibly outside the viewport: click as the element's own event
const click = (locator) => locator.dispatchEvent("click");

before(async () => {
  reports = enginePayloads(["gpt2-12", "llama70b"]);
  view = await openPage();
  page = view.page;
});

after(async () => view?.close());

test("GPT-2 opens as a table of contents: its twelve blocks drawn collapsed, alike", async () => {
  const fx = reports["gpt2-12"].fx;
  await view.show(fx);
  const blocks = page.locator("g.group.collapsed[data-group^='blocks.']");
  assert.equal(await blocks.count(), 12);
  // the level named by its opcodes, as the lesson reads a graph
  assert.equal(await page.locator("#rung").textContent(), "above aot_autograd (module level)");
  const third = page.locator("g.group[data-group='blocks.3']");
  assert.deepEqual(await third.locator("text.name, text.detail").allTextContents(), ["blocks.3: Block · 4 of 12", "23 nodes · (B, T, 768) → (B, T, 768)"]);
  // nothing inside a collapsed block is drawn
  assert.equal(await page.locator("g.node[data-id='blocks_3_attn_qkv']").count(), 0);
  assert.ok(await page.locator("g.node").count() < 20);
  assert.deepEqual(await view.violations(), [], "the page and its layout worker run under the strict CSP");
  assert.deepEqual(view.errors, []);
  await page.screenshot({ path: artifact("webview-gpt2-collapsed-dark.png") });
});

test("opening a block draws its modules and nodes inside it", async () => {
  const before = await draws();
  await click(page.locator("g.group[data-group='blocks.3'] text.toggle"));
  await waitForDraw(page, before);
  const block = page.locator("g.group.expanded[data-group='blocks.3']");
  assert.equal(await block.count(), 1);
  for (const inner of ["blocks.3.attn", "blocks.3.mlp"]) {
    assert.equal(await page.locator(`g.group.collapsed[data-group='${inner}']`).count(), 1, inner);
  }
  // a torch.nn leaf (the block's first LayerNorm) is one call_module node inside it
  assert.equal(await page.locator("g.node[data-id='blocks_3_norm1']").count(), 1);
  // Block.forward's own residual adds are its nodes
  const fx = reports["gpt2-12"].fx;
  const adds = fx.graph.nodes.filter((n) => n.scope === "blocks.3" && n.target === "operator.add").map((n) => n.id);
  assert.equal(adds.length, 2);
  for (const id of adds) {
    assert.equal(await page.locator(`g.node[data-id='${id}']`).count(), 1);
  }
  await page.screenshot({ path: artifact("webview-gpt2-block-open-dark.png") });
});

test("a search finds a node inside a collapsed group and opens the groups around it", async () => {
  const fx = reports["gpt2-12"].fx;
  const target = fx.graph.nodes.find((n) => n.scope.startsWith("blocks.7.attn") && n.op === "call_module" && n.target.endsWith("qkv"));
  assert.ok(target, "block 7's attention has its qkv projection");
  await page.locator("#search").fill("[B, T, 2304]");
  await page.locator("#search-count", { hasText: "12 matches" }).waitFor();
  // the matches lie in collapsed blocks: the blocks say so
  assert.ok(await page.locator("g.group.contains-match").count() >= 11);
  await page.locator("#search").fill(target.id);
  await page.locator("#search-count", { hasText: "1 match" }).waitFor();
  const before = await draws();
  await page.locator("#search").press("Enter");
  await waitForDraw(page, before);
  await page.locator(`g.node.match.selected[data-id='${target.id}']`).waitFor();
  assert.equal(await page.locator("g.group.expanded[data-group='blocks.7']").count(), 1);
  assert.equal(await page.locator("g.group.expanded[data-group='blocks.7.attn']").count(), 1);
  // the details pane shows it: its input with its shape, its users with their lines, its printout line
  const details = page.locator("#details");
  await details.locator("h3", { hasText: target.id }).waitFor();
  assert.match(await details.textContent(), /\(B, T, 768\)/);
  assert.match(await details.textContent(), /line \d+/);
  assert.ok((await details.locator("pre.printout-line").textContent()).startsWith(`%${target.id} `));
  await page.screenshot({ path: artifact("webview-gpt2-search-dark.png") });
  await page.locator("#search").fill("");
});

test("clicking a node reveals its span; clicking a group reveals the line that called it", async () => {
  const fx = reports["gpt2-12"].fx;
  const target = fx.graph.nodes.find((n) => n.scope.startsWith("blocks.7.attn") && n.target.endsWith("qkv"));
  await click(page.locator(`g.node[data-id='${target.id}']`));
  await page.waitForFunction((id) => window.__posted.some((m) => m.type === "reveal" && m.node === id), target.id);
  const revealed = (await view.posted()).filter((m) => m.type === "reveal").pop();
  assert.deepEqual(revealed, { type: "reveal", node: target.id, line: target.line, col: target.col, end_line: target.end_line, end_col: target.end_col });
  // bench/models/gpt2_small.py line 35: `qkv = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads)`
  assert.equal(target.line, 35);

  await click(page.locator("g.group[data-group='blocks.5'] text.name"));
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "reveal" && m.node === "blocks.5"));
  const call = (await view.posted()).filter((m) => m.type === "reveal").pop();
  // GPT.forward line 81: `x = block(x)` in the loop over the blocks
  assert.deepEqual([call.line, call.group], [81, true]);
  await page.locator("#details h3", { hasText: "blocks.5" }).waitFor();
  assert.match(await page.locator("#details").textContent(), /class\s*Block/);
});

test("the node chosen at the fx level marks the nodes of its line at the aten level", async () => {
  const aten = reports["gpt2-12"].aten;
  await view.show(aten);
  // the fx node chosen last was block 7's qkv call, line 35: its aten linear sits in the collapsed blocks
  assert.ok(await page.locator("g.group.contains-linked").count() >= 1);
  assert.equal(await page.locator("#level option").count(), aten.level_info.length, "every level fxlens knows is offered");
  assert.ok(await page.locator("#level option", { hasText: "trace on request" }).count() >= 1);
});

test("the cursor's line marks its nodes, and the groups that hold them", async () => {
  await view.send({ type: "cursor", line: 38 }); // `return self.out(...)` in every attention block
  await page.locator("g.group.contains-cursor").nth(11).waitFor();
  await view.send({ type: "cursor", line: null });
  await page.locator("g.group.contains-cursor").first().waitFor({ state: "detached" });
});

test("the LLaMA-70B-shaped decoder opens collapsed: eighty layers, and one opens", async () => {
  const aten = reports.llama70b.aten;
  await view.show(aten);
  assert.equal(await page.locator("g.group.collapsed[data-group^='layers.']").count(), 80);
  // export lifts ~800 parameters to placeholders: they sit inside the layers that read them
  assert.ok(await page.locator("g.node").count() < 30, `${await page.locator("g.node").count()} nodes drawn at the top`);
  const before = await draws();
  await click(page.locator("g.group[data-group='layers.40'] text.toggle"));
  await waitForDraw(page, before);
  assert.equal(await page.locator("g.group.collapsed[data-group='layers.40.attn']").count(), 1);
  assert.equal(await page.locator("g.group.collapsed[data-group='layers.40.mlp']").count(), 1);
});

test("both themes: VS Code's dark and light variables colour the page", async () => {
  await view.show(reports["gpt2-12"].fx);
  // Escape clears the choice made in the tests before (its line stays marked otherwise)
  await page.locator("svg#graph").focus();
  await page.keyboard.press("Escape");
  await page.locator("g.contains-linked").first().waitFor({ state: "detached" });
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const dark = await background();
  await useLightTheme(page);
  assert.notEqual(await background(), dark);
  assert.equal(await background(), "rgb(255, 255, 255)");
  await page.screenshot({ path: artifact("webview-gpt2-collapsed-light.png") });
  const before = await draws();
  await click(page.locator("g.group[data-group='blocks.0'] text.toggle"));
  await waitForDraw(page, before);
  await page.screenshot({ path: artifact("webview-gpt2-block-open-light.png") });
});

test("keyboard: arrows move between boxes, Space opens a group, Enter reveals", async () => {
  await page.locator("svg#graph").focus();
  await page.keyboard.press("ArrowDown");
  await page.locator("g.selected").waitFor();
  const first = await page.locator("g.selected").getAttribute("data-key");
  await page.keyboard.press("ArrowDown");
  await page.waitForFunction((key) => document.querySelector("g.selected")?.dataset.key !== key, first);
  // walk down to a collapsed block and open it with Space
  for (let i = 0; i < 40 && !(await page.locator("g.selected.group.collapsed").count()); i++) {
    await page.keyboard.press("ArrowDown");
  }
  const group = await page.locator("g.selected.group.collapsed").getAttribute("data-group");
  const before = await draws();
  await page.keyboard.press(" ");
  await waitForDraw(page, before);
  assert.equal(await page.locator(`g.group.expanded[data-group='${group}']`).count(), 1);
  const revealsBefore = (await view.posted()).filter((m) => m.type === "reveal").length;
  await page.keyboard.press("Enter");
  await page.waitForFunction((n) => window.__posted.filter((m) => m.type === "reveal").length > n, revealsBefore);
});

test("export: the drawing as SVG and as PNG", async () => {
  await (await toolbarControl(page, "#export-svg")).click();
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "export" && m.format === "svg"));
  const svg = (await view.posted()).find((m) => m.type === "export" && m.format === "svg");
  assert.equal(svg.name, "GPT.fx.svg");
  assert.match(svg.data, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg.data, /blocks\.3: Block/);
  await (await toolbarControl(page, "#export-png")).click();
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "export" && m.format === "png"));
  const png = (await view.posted()).find((m) => m.type === "export" && m.format === "png");
  assert.equal(Buffer.from(png.data, "base64").subarray(1, 4).toString(), "PNG");
});

test("a class whose level failed part way draws what traced, with the failure marked", async () => {
  const fx = reports["gpt2-12"].fx;
  const partial = { ...fx, ok: false, graph: { nodes: fx.graph.nodes.slice(0, 40), edges: fx.graph.edges.filter((e) => fx.graph.nodes.slice(0, 40).some((n) => n.id === e.target)) },
    diagnostics: [{ line: 44, col: 8, end_line: 44, end_col: 40, severity: "error", category: "data-dependent-control-flow", message: "TraceError: symbolically traced variables cannot be used as inputs to control flow", explanation: "", fix: "" }] };
  await view.show(partial);
  await page.locator("g.node.op-failure").waitFor({ state: "attached" });
  assert.match(await page.locator("g.node.op-failure").textContent(), /fails at line 44/);
  assert.match(await page.locator("#message").textContent(), /failure is marked/);
});

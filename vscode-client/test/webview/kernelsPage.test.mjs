// The inductor level in the graph page: real payloads of examples/residual_mlp.py (the engine traced it,
// kernels and all), the aten and core-aten nodes drawn in the colour of the kernel that runs them.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { artifact } from "../browser.mjs";
import { enginePayloads, openPage } from "./page.mjs";

let reports, view;

before(async () => {
  reports = enginePayloads(["small"], ["aten", "core-aten", "inductor"]).small;
  view = await openPage();
});

after(async () => {
  await view?.close();
});

/** node id -> the kernel-cN class its box carries ("" for none), as drawn. */
async function colours() {
  return view.page.evaluate(() => Object.fromEntries([...document.querySelectorAll("svg#graph g.node")].map((g) =>
    [g.dataset.id, [...g.classList].find((c) => /^kernel-c\d+$/.test(c)) ?? ""])));
}

test("every kernel of the inductor view has its own colour", async () => {
  await view.show(reports.inductor);
  const kernels = reports.inductor.graph.nodes;
  assert.ok(kernels.length >= 3, JSON.stringify(kernels.map((n) => n.id)));
  const drawn = await colours();
  for (const node of kernels) {
    assert.equal(drawn[node.id], `kernel-c${node.kernel_colour % 10}`, node.id);
  }
  assert.deepEqual(await view.violations(), [], "the page must run under its strict CSP");
  assert.deepEqual(view.errors, []);
});

test("the aten nodes are coloured by the kernel that runs them, as the server matched them", async () => {
  for (const level of ["aten", "core-aten"]) {
    await view.show(reports[level]);
    const drawn = await colours();
    const run = reports[level].graph.nodes.filter((n) => typeof n.kernel === "string");
    assert.ok(run.length >= 3, `${level}: ${run.length} nodes with a kernel`);
    for (const node of reports[level].graph.nodes) {
      const expected = typeof node.kernel_colour === "number" ? `kernel-c${node.kernel_colour % 10}` : "";
      assert.equal(drawn[node.id] ?? expected, expected, `${level} ${node.id}`);
    }
    // the same kernel, the same colour: a node and the kernel running it in the inductor view
    const addmm = run.find((n) => n.kernel.startsWith("extern_kernels.addmm"));
    const kernel = reports.inductor.graph.nodes.find((n) => n.id === addmm.kernel);
    assert.equal(addmm.kernel_colour, kernel.kernel_colour);
    const title = await view.page.locator(`g.node[data-id="${addmm.id}"] > title`).textContent();
    assert.match(title, new RegExp(`runs in kernel ${addmm.kernel.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  }
  await view.page.screenshot({ path: artifact("webview-kernels-core-aten.png") });
  assert.deepEqual(view.errors, []);
});

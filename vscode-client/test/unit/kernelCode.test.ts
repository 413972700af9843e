import assert from "node:assert/strict";
import { test } from "node:test";
import { kernelArguments, kernelDocumentPath, kernelSelection } from "../../src/core/kernelCode";
import { kernelClasses, kernelTitle } from "../../webview/kernelColours";
import type { GraphNode } from "../../src/core/report";

test("the hover link's arguments are [uri, className, kernel]; anything else runs nothing", () => {
  assert.deepEqual(kernelArguments(["file:///m.py", "Net", "cpp_fused_relu_0:2"]), ["file:///m.py", "Net", "cpp_fused_relu_0:2"]);
  assert.equal(kernelArguments(["file:///m.py", "Net"]), undefined);
  assert.equal(kernelArguments(["file:///m.py", 3, "k"]), undefined);
  assert.equal(kernelArguments([]), undefined);
});

test("a class's code is one read-only Python document, opened with the kernel selected", () => {
  assert.equal(kernelDocumentPath({ uri: "file:///w/model.py", class: "Net" }), "/model.Net.inductor/output_code.py");
  assert.deepEqual(kernelSelection({ line: 33, end_line: 63 }), [32, 62]);
  assert.deepEqual(kernelSelection({ line: 150, end_line: null }), [149, 149]);
});

function node(extra: Partial<GraphNode>): GraphNode {
  return { id: "relu", op: "call_function", target: "aten.relu.default", shape: "(2, 4)", dtype: "float32", label: "relu", scope: "",
    line: 12, col: 0, end_line: 12, end_col: 9, ...extra };
}

test("a node a kernel runs is drawn in that kernel's colour, and says which kernel", () => {
  assert.equal(kernelClasses(node({ kernel: "cpp_fused_relu_0:2", kernel_colour: 1 })), " kernel-coloured kernel-c1");
  assert.equal(kernelClasses(node({ kernel: "cpp_fused_relu_0:2", kernel_colour: 13 })), " kernel-coloured kernel-c3");
  assert.equal(kernelClasses(node({})), "");
  assert.equal(kernelTitle(node({ kernel: "cpp_fused_relu_0:2", kernel_colour: 1 })), "\nruns in kernel cpp_fused_relu_0:2");
  assert.equal(kernelTitle(node({ id: "cpp_fused_relu_0:2", kernel: "cpp_fused_relu_0:2", kernel_colour: 1 })), "");
});

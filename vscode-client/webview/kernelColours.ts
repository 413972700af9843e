// The inductor level's kernels as colours: a node of the aten/core-aten views (and a kernel of the inductor
// view) carries `kernel` (the kernel's name) and `kernel_colour` (its index among the class's kernels), so
// every node one kernel runs is drawn in that kernel's colour, the same in each level's view.
import type { GraphNode } from "../src/core/report";

// main.css defines .kernel-c0 .. .kernel-c9 (the webview's CSP allows no inline style)
export const KERNEL_COLOURS = 10;

/** The CSS classes of a node run by a kernel ("" for a node no kernel runs, or a server without kernels). */
export function kernelClasses(node: GraphNode): string {
  const index = node.kernel_colour;
  return typeof index === "number" && Number.isInteger(index) && index >= 0 ? ` kernel-coloured kernel-c${index % KERNEL_COLOURS}` : "";
}

/** What a box's tooltip adds: the kernel that runs the node. */
export function kernelTitle(node: GraphNode): string {
  return typeof node.kernel === "string" && node.kernel !== node.id ? `\nruns in kernel ${node.kernel}` : "";
}

// The hover's "show code" link: `fxlens.showKernel [uri, className, kernel]` asks the server for the class's
// inductor code (`fxlens.kernelCode`) and opens it read-only at the kernel. Pure parts, unit tested.

export const CLIENT_SHOW_KERNEL = "fxlens.showKernel";
export const SERVER_KERNEL_CODE = "fxlens.kernelCode";
export const KERNEL_SCHEME = "fxlens-kernel";

/** What `fxlens.kernelCode` answers (lsp/kernel_code.py): the code, and the kernel's 1-based lines in it. */
export interface KernelCode {
  ok: boolean;
  uri: string;
  class: string | null;
  kernel: string | null;
  target: string;
  kind: string;
  code: string;
  line: number | null;
  end_line: number | null;
  language: string;
  message: string;
}

/** The link's arguments, checked: [uri, className, kernel], or undefined when they are not three strings. */
export function kernelArguments(args: unknown[]): [string, string, string] | undefined {
  const [uri, className, kernel] = args;
  return typeof uri === "string" && typeof className === "string" && typeof kernel === "string" && uri && className && kernel
    ? [uri, className, kernel]
    : undefined;
}

/** The virtual document's path: one per class, named like inductor's own file (its language: Python). */
export function kernelDocumentPath(result: Pick<KernelCode, "uri" | "class">): string {
  const stem = (result.uri.split("/").pop() ?? "module").replace(/\.py$/, "");
  return `/${stem}.${result.class ?? "class"}.inductor/output_code.py`;
}

/** The kernel's lines in the document, 0-based: [first, end) (the end line is not selected). */
export function kernelSelection(result: Pick<KernelCode, "line" | "end_line">): [number, number] {
  const start = Math.max((result.line ?? 1) - 1, 0);
  return [start, Math.max((result.end_line ?? result.line ?? 1) - 1, start)];
}

// Read-only virtual documents holding a class's inductor code (scheme fxlens-kernel:), opened at a kernel.
import * as vscode from "vscode";
import { KERNEL_SCHEME, KernelCode, kernelDocumentPath, kernelSelection } from "./core/kernelCode";

export class KernelDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(KERNEL_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "# fxlens: this class's inductor code is no longer held; hover the line again";
  }

  /** Opens the code at the kernel (a document already open is refreshed: the class was traced again). */
  async show(result: KernelCode): Promise<void> {
    const uri = vscode.Uri.from({ scheme: KERNEL_SCHEME, path: kernelDocumentPath(result) });
    const key = uri.toString();
    const fresh = this.texts.get(key) !== result.code;
    this.texts.set(key, result.code);
    if (fresh) {
      this.changed.fire(uri);
    }
    const document = await vscode.workspace.openTextDocument(uri);
    const [start, end] = kernelSelection(result);
    const selection = new vscode.Range(start, 0, end, 0);
    await vscode.window.showTextDocument(document, { selection, preview: true, viewColumn: vscode.ViewColumn.Beside });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}

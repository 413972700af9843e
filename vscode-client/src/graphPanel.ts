// The graph view beside the editor: fetches fxlens.showGraph results, hands them to the page,
// follows report changes and the cursor, reveals a clicked node's (or group's call) source span and
// saves exported drawings.
import { randomBytes } from "crypto";
import * as vscode from "vscode";
import { HostToPage, PageToHost } from "./core/messages";
import { editorRange, reportLine } from "./core/positions";
import { GraphReport, reportProblem } from "./core/report";
import { graphPageHtml } from "./core/webviewHtml";

export type FetchGraph = (uri: string, className: string | undefined, level: string | undefined) => Promise<unknown>;

interface Shown {
  uri: string; // normalised through vscode.Uri
  className: string | undefined;
  level: string | undefined;
  report: GraphReport | undefined;
}

const sameUri = (a: string, b: string) => vscode.Uri.parse(a).toString() === vscode.Uri.parse(b).toString();

export class GraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: Shown | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  // answers to older requests are dropped: only the latest fetch may draw
  private fetchGeneration = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly fetchGraph: FetchGraph,
    private readonly log: vscode.OutputChannel,
  ) {
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection((event) => this.followCursor(event.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((editor) => editor && this.followCursor(editor)),
    );
  }

  /** Opens (or reuses) the view for a class of a document and draws its graph. */
  async show(uri: string, className: string | undefined, level: string | undefined): Promise<void> {
    this.shown = { uri: vscode.Uri.parse(uri).toString(), className, level, report: undefined };
    this.ensurePanel();
    await this.refresh();
  }

  /** Draws a result fetched elsewhere (the server command run directly). */
  showResult(uri: string, className: string | undefined, level: string | undefined, result: unknown): void {
    this.shown = { uri: vscode.Uri.parse(uri).toString(), className, level, report: undefined };
    this.ensurePanel();
    this.fetchGeneration++;
    this.accept(result);
  }

  /** The server has a newer report for `uri`: redraw if that is what the view shows. */
  async reportChanged(uri: string): Promise<void> {
    if (this.panel && this.shown && sameUri(uri, this.shown.uri)) {
      await this.refresh();
    }
  }

  private ensurePanel(): void {
    if (this.panel) {
      this.panel.reveal(undefined, true);
      return;
    }
    const webviewRoot = vscode.Uri.joinPath(this.extensionUri, "dist", "webview");
    const panel = vscode.window.createWebviewPanel(
      "fxlens.graph",
      "FX graph",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [webviewRoot] },
    );
    panel.webview.html = graphPageHtml({
      cspSource: panel.webview.cspSource,
      nonce: randomBytes(16).toString("hex"),
      scriptUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(webviewRoot, "main.js")).toString(),
      styleUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(webviewRoot, "main.css")).toString(),
    });
    panel.webview.onDidReceiveMessage((message: PageToHost) => this.onPageMessage(message), null, this.disposables);
    panel.onDidDispose(() => (this.panel = undefined), null, this.disposables);
    this.panel = panel;
  }

  private async refresh(): Promise<void> {
    const shown = this.shown;
    if (!shown) {
      return;
    }
    const generation = ++this.fetchGeneration;
    this.post({ type: "loading", className: shown.className ?? "", level: shown.level ?? "fx" });
    let result: unknown;
    try {
      result = await this.fetchGraph(shown.uri, shown.className, shown.level);
    } catch (error) {
      if (generation === this.fetchGeneration) {
        this.post({ type: "error", message: `fxlens could not get the graph: ${errorText(error)}`, level: shown.level });
      }
      return;
    }
    if (generation === this.fetchGeneration) {
      this.accept(result);
    }
  }

  private accept(result: unknown): void {
    const problem = reportProblem(result);
    if (problem || !this.shown) {
      this.post({ type: "error", message: problem ?? "nothing to show" });
      return;
    }
    const report = result as GraphReport;
    this.shown = { ...this.shown, className: report.class, level: report.level, report };
    if (this.panel) {
      this.panel.title = `FX graph: ${report.class} (${report.level})`;
    }
    this.post({ type: "report", report });
    const editor = vscode.window.activeTextEditor;
    if (editor) {
      this.followCursor(editor);
    }
  }

  private async onPageMessage(message: PageToHost): Promise<void> {
    switch (message.type) {
      case "ready":
        // the page is new (first open, or re-created after being hidden): give it what it shows
        if (this.shown?.report) {
          this.post({ type: "report", report: this.shown.report });
        }
        break;
      case "level":
        if (this.shown) {
          this.shown = { ...this.shown, level: message.level };
          await this.refresh();
        }
        break;
      case "reveal":
        await this.reveal(message);
        break;
      case "export":
        await this.save(message);
        break;
    }
  }

  private async reveal(span: { line: number; col: number | null; end_line: number | null; end_col: number | null }): Promise<void> {
    if (!this.shown) {
      return;
    }
    const uri = vscode.Uri.parse(this.shown.uri);
    const document = await vscode.workspace.openTextDocument(uri);
    const range = editorRange(span, (line) => (line < document.lineCount ? document.lineAt(line).text : undefined));
    const selection = new vscode.Selection(range.start.line, range.start.character, range.end.line, range.end.character);
    const visible = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
    const editor = await vscode.window.showTextDocument(document, {
      viewColumn: visible?.viewColumn ?? vscode.ViewColumn.One,
      selection,
      preserveFocus: false,
    });
    editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** Saves an exported drawing where the user chooses (next to the model file by default). */
  private async save(exported: { format: "svg" | "png"; name: string; data: string }): Promise<void> {
    const folder = this.shown ? vscode.Uri.joinPath(vscode.Uri.parse(this.shown.uri), "..") : undefined;
    const target = await vscode.window.showSaveDialog({
      defaultUri: folder ? vscode.Uri.joinPath(folder, exported.name) : undefined,
      filters: exported.format === "svg" ? { "SVG image": ["svg"] } : { "PNG image": ["png"] },
    });
    if (!target) {
      return;
    }
    const bytes = exported.format === "svg" ? Buffer.from(exported.data, "utf8") : Buffer.from(exported.data, "base64");
    await vscode.workspace.fs.writeFile(target, bytes);
    vscode.window.showInformationMessage(`fxlens: graph saved to ${target.fsPath}`);
  }

  private followCursor(editor: vscode.TextEditor): void {
    if (!this.panel || !this.shown || editor.document.uri.toString() !== this.shown.uri) {
      return;
    }
    this.post({ type: "cursor", line: reportLine(editor.selection.active.line) });
  }

  private post(message: HostToPage): void {
    this.panel?.webview.postMessage(message).then(undefined, (error) => this.log.appendLine(`[fxlens] graph view: ${errorText(error)}`));
  }

  dispose(): void {
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// The graph view beside the editor: fetches fxlens.showGraph results (or, for a pass preview,
// fxlens.runPass results), hands them to the page, follows report changes and the cursor, reveals a
// clicked node's (or group's call) source span and saves exported drawings.
import { randomBytes } from "crypto";
import * as vscode from "vscode";
import { HostToPage, PageToHost } from "./core/messages";
import { passGraphReport, PassPreview, passProblem, PassTarget } from "./core/passPreview";
import { editorRange, reportLine } from "./core/positions";
import { GraphReport, reportProblem } from "./core/report";
import { graphPageHtml } from "./core/webviewHtml";

export type FetchGraph = (uri: string, className: string | undefined, level: string | undefined) => Promise<unknown>;
export type RunPass = (target: PassTarget) => Promise<unknown>;

interface Shown {
  uri: string; // normalised through vscode.Uri
  className: string | undefined;
  level: string | undefined;
  report: GraphReport | undefined;
  // a pass preview: the pass run on the class; its graph is the one after the pass
  pass?: PassTarget;
  preview?: PassPreview;
}

const sameUri = (a: string, b: string) => vscode.Uri.parse(a).toString() === vscode.Uri.parse(b).toString();

export class GraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: Shown | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  // answers to older requests are dropped: only the latest fetch may draw
  private fetchGeneration = 0;
  // the split view: a second level of the shown class drawn beside, kept while the class changes
  private split: { level: string; report: GraphReport | undefined } | undefined;
  private splitGeneration = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly fetchGraph: FetchGraph,
    private readonly runPass: RunPass,
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

  /** Runs a pass on a class and draws the graph after it, the changes marked, the preview beside; re-run on edits. */
  async showPass(target: PassTarget): Promise<PassPreview | undefined> {
    this.shown = { uri: vscode.Uri.parse(target.uri).toString(), className: target.className, level: "fx", report: undefined, pass: target };
    this.ensurePanel();
    await this.refresh();
    return this.shown?.preview;
  }

  /** Draws a result fetched elsewhere (the server command run directly). */
  showResult(uri: string, className: string | undefined, level: string | undefined, result: unknown): void {
    this.shown = { uri: vscode.Uri.parse(uri).toString(), className, level, report: undefined };
    this.ensurePanel();
    this.fetchGeneration++;
    this.accept(result);
    void this.refreshSplit();
  }

  /** The server has a newer report for `uri`: redraw if that is what the view shows. */
  async reportChanged(uri: string): Promise<void> {
    const passUri = this.shown?.pass?.passUri;
    if (this.panel && this.shown && (sameUri(uri, this.shown.uri) || (passUri !== undefined && sameUri(uri, passUri)))) {
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
    const level = shown.pass ? `fx, pass ${shown.pass.passName}` : shown.level ?? "fx";
    this.post({ type: "loading", className: shown.className ?? "", level });
    let result: unknown;
    try {
      result = await (shown.pass ? this.runPass(shown.pass) : this.fetchGraph(shown.uri, shown.className, shown.level));
    } catch (error) {
      if (generation === this.fetchGeneration) {
        const what = shown.pass ? `run the pass ${shown.pass.passName}` : "get the graph";
        this.post({ type: "error", message: `fxlens could not ${what}: ${errorText(error)}`, level: shown.level });
      }
      return;
    }
    if (generation === this.fetchGeneration) {
      shown.pass ? this.acceptPass(result) : this.accept(result);
      await this.refreshSplit();
    }
  }

  /** Fetches and posts the level drawn beside, if there is a split. */
  private async refreshSplit(): Promise<void> {
    const split = this.split;
    const shown = this.shown;
    if (!split || !shown) {
      return;
    }
    const generation = ++this.splitGeneration;
    let result: unknown;
    try {
      result = await this.fetchGraph(shown.uri, shown.className, split.level);
    } catch (error) {
      result = { message: `fxlens could not get the ${split.level} graph: ${errorText(error)}` };
    }
    if (generation !== this.splitGeneration || this.split !== split) {
      return;
    }
    const problem = reportProblem(result);
    split.report = problem ? undefined : (result as GraphReport);
    this.post(problem ? { type: "split", report: null, message: problem } : { type: "split", report: split.report! });
  }

  private acceptPass(result: unknown): void {
    const problem = passProblem(result);
    if (problem || !this.shown) {
      this.post({ type: "error", message: `The pass gave no preview: ${problem ?? "nothing to show"}` });
      return;
    }
    const preview = result as PassPreview;
    const report = passGraphReport(preview);
    this.shown = { ...this.shown, className: report.class, level: report.level, report, preview };
    if (this.panel) {
      this.panel.title = `FX pass: ${preview.pass} on ${report.class}`;
    }
    this.post({ type: "report", report, pass: preview });
    this.followActiveEditor();
  }

  /** Leaves a pass preview for the class's own graph at `level`. */
  private async closePass(level: string | undefined): Promise<void> {
    if (this.shown) {
      this.shown = { uri: this.shown.uri, className: this.shown.className, level, report: undefined };
      await this.refresh();
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
    this.followActiveEditor();
  }

  private followActiveEditor(): void {
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
          this.post({ type: "report", report: this.shown.report, pass: this.shown.preview });
        }
        if (this.split?.report) {
          this.post({ type: "split", report: this.split.report });
        }
        break;
      case "split":
        this.split = message.level ? { level: message.level, report: undefined } : undefined;
        if (this.split) {
          await this.refreshSplit();
        } else {
          this.post({ type: "split", report: null });
        }
        break;
      case "level":
        if (this.shown?.pass) {
          await this.closePass(message.level);
        } else if (this.shown) {
          this.shown = { ...this.shown, level: message.level };
          await this.refresh();
        }
        break;
      case "closePass":
        await this.closePass(undefined);
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

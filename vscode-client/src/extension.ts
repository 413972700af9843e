// Wiring only: settings, interpreter, client, status bar, graph view and commands meet here.
import * as vscode from "vscode";
import { FxlensClient } from "./client";
import { classAtLine, showGraphArguments } from "./core/graphTarget";
import { CLIENT_SHOW_GRAPH, SERVER_SHOW_GRAPH } from "./core/lensCommands";
import {
  classPicks, CLIENT_RUN_GRAPH_PASS, parsePassChoices, passPicks, runPassArguments, SERVER_PASS_CHOICES, SERVER_RUN_PASS,
} from "./core/passPreview";
import { readSettings, serverSettings, FxlensSettings } from "./core/settings";
import { CLIENT_SHOW_KERNEL, KernelCode, kernelArguments, SERVER_KERNEL_CODE } from "./core/kernelCode";
import { GraphPanel } from "./graphPanel";
import { KernelDocuments } from "./kernelDocument";
import { onPythonInterpreterChange, probeInterpreter, resolveInterpreter } from "./interpreter";
import { SHOW_OUTPUT_COMMAND, StatusBar } from "./statusBar";

const currentSettings = (): FxlensSettings =>
  readSettings((key) => vscode.workspace.getConfiguration("fxlens").get(key));

let stopClient: (() => Promise<void>) | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("fxlens");
  const status = new StatusBar();
  const panel = new GraphPanel(
    context.extensionUri,
    (uri, className, level) => client.execute(SERVER_SHOW_GRAPH, showGraphArguments(uri, className, level)),
    (target) => client.execute(SERVER_RUN_PASS, runPassArguments(target)),
    log,
  );
  const client = new FxlensClient(context, log, {
    status: (state, message) => status.setServer(state, message),
    reportChanged: (uri) => void panel.reportChanged(uri),
    graphShown: (args, result) => {
      const [uri, className, level] = args as [string, string | undefined, string | undefined];
      panel.showResult(uri, className ?? undefined, level ?? undefined, result);
    },
    passRequested: (target): Promise<unknown> => panel.showPass(target),
  });
  stopClient = () => client.stop();
  let interpreter = "";
  const problemsShown = new Set<string>();

  async function startServer(): Promise<void> {
    const settings = currentSettings();
    const choice = await resolveInterpreter(settings.python, log);
    const probe = await probeInterpreter(choice.path);
    log.appendLine(`[fxlens] interpreter ${choice.path} (from ${choice.source}): ` +
      (probe.ok ? `Python ${probe.version}, torch ${probe.torch}` : `${probe.problem}; fix: ${probe.fix}`));
    if (!probe.ok) {
      await client.stop();
      status.setUnavailable(`${probe.problem}.\nFix: ${probe.fix}.`);
      notifyOnce(`${probe.problem}. Fix: ${probe.fix}.`);
      return;
    }
    status.setUnavailable(undefined);
    interpreter = choice.path;
    await client.start(interpreter, serverSettings(settings, interpreter, vscode.workspace.isTrusted));
  }

  // One notification per distinct problem: a missing torch must not nag on every restart.
  function notifyOnce(text: string): void {
    if (problemsShown.has(text)) {
      return;
    }
    problemsShown.add(text);
    const actions = vscode.extensions.getExtension("ms-python.python") ? ["Select interpreter", "Settings"] : ["Settings"];
    void vscode.window.showWarningMessage(`fxlens: ${text}`, ...actions).then((choice) => {
      if (choice === "Select interpreter") {
        void vscode.commands.executeCommand("python.setInterpreter");
      } else if (choice === "Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "fxlens.python");
      }
    });
  }

  // Starts run one after another: an interpreter change and a settings change arriving together must
  // not start two servers.
  let starting = Promise.resolve();
  function restartInBackground(): void {
    starting = starting.then(startServer).catch((error) => {
      log.appendLine(`[fxlens] the server did not start: ${String(error)}`);
      status.setServer("stopped", String(error));
    });
  }

  async function showGraph(uri?: string, className?: string, level?: string): Promise<void> {
    if (uri === undefined) {
      const target = pythonAtCursor();
      if (!target) {
        void vscode.window.showInformationMessage("fxlens: open a Python file or notebook with an nn.Module to see its graph.");
        return;
      }
      uri = target.document.uri.toString();
      className = classAtLine(target.document.getText().split(/\r?\n/), target.line);
    }
    await panel.show(uri, className, level);
  }

  /** The palette's "Run graph pass…": a class of the file (the one at the cursor first), then a pass. */
  async function runGraphPass(): Promise<void> {
    const target = pythonAtCursor();
    if (!target) {
      void vscode.window.showInformationMessage("fxlens: open a Python file or notebook with an nn.Module to run a graph pass on it.");
      return;
    }
    const uri = target.document.uri.toString();
    let choices;
    try {
      choices = parsePassChoices(await client.execute(SERVER_PASS_CHOICES, [uri]));
    } catch (error) {
      void vscode.window.showWarningMessage(`fxlens: no pass can run: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    const classes = classPicks(choices, classAtLine(target.document.getText().split(/\r?\n/), target.line));
    if (classes.problem) {
      void vscode.window.showInformationMessage(`fxlens: ${classes.problem}.`);
      return;
    }
    const cls = await vscode.window.showQuickPick(classes.items, { title: "fxlens: Run graph pass… (1/2)", placeHolder: "the class to run a pass on" });
    if (!cls) {
      return;
    }
    if (cls.value.why) {
      void vscode.window.showWarningMessage(`fxlens: no pass can run on ${cls.value.name}: ${cls.value.why}`);
      return;
    }
    const pass = await vscode.window.showQuickPick(passPicks(choices), {
      title: `fxlens: Run graph pass on ${cls.value.name} (2/2)`, placeHolder: "the pass to run", matchOnDescription: true, matchOnDetail: true,
    });
    if (pass) {
      await panel.showPass({ uri, className: cls.value.name, passName: pass.value.name, passUri: pass.value.passUri });
    }
  }

  /** The Python text the cursor is in: a file's editor, a notebook cell's editor, or a notebook's selected code cell. */
  function pythonAtCursor(): { document: vscode.TextDocument; line: number } | undefined {
    const editor = vscode.window.activeTextEditor;
    if (editor && editor.document.languageId === "python") {
      return { document: editor.document, line: editor.selection.active.line };
    }
    // a notebook with a cell selected, but no cell editor focused (the palette opened from the cell list)
    const notebook = vscode.window.activeNotebookEditor;
    const cell = notebook ? notebook.notebook.cellAt(notebook.selection.start) : undefined;
    return cell && cell.kind === vscode.NotebookCellKind.Code && cell.document.languageId === "python" ? { document: cell.document, line: 0 } : undefined;
  }

  // the hover's "show code" link: the kernel's code, read-only, at the kernel
  const kernelDocuments = new KernelDocuments();
  async function showKernel(...args: unknown[]): Promise<void> {
    const target = kernelArguments(args);
    if (!target) {
      return;
    }
    const result = (await client.execute(SERVER_KERNEL_CODE, target).catch((error) => ({ ok: false, message: String(error) }))) as Partial<KernelCode>;
    if (!result?.ok || typeof result.code !== "string") {
      void vscode.window.showWarningMessage(`fxlens: no code for ${target[2]}: ${result?.message || "the server has none"}`);
      return;
    }
    await kernelDocuments.show(result as KernelCode);
  }

  context.subscriptions.push(
    log,
    status,
    panel,
    kernelDocuments,
    vscode.commands.registerCommand(CLIENT_SHOW_GRAPH, showGraph),
    vscode.commands.registerCommand(CLIENT_RUN_GRAPH_PASS, runGraphPass),
    vscode.commands.registerCommand(CLIENT_SHOW_KERNEL, showKernel),
    vscode.commands.registerCommand("fxlens.retraceFile", async () => {
      const uri = pythonAtCursor()?.document.uri.toString();
      if (uri) {
        await client.execute("fxlens.retrace", [uri]).catch((error) =>
          vscode.window.showWarningMessage(`fxlens: could not retrace: ${error instanceof Error ? error.message : String(error)}`));
      }
    }),
    vscode.commands.registerCommand("fxlens.restart", () => {
      problemsShown.clear();
      restartInBackground();
    }),
    vscode.commands.registerCommand(SHOW_OUTPUT_COMMAND, () => log.show(true)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("fxlens.python")) {
        restartInBackground(); // a new interpreter needs a new server and worker
      } else if (event.affectsConfiguration("fxlens")) {
        void client.updateSettings(serverSettings(currentSettings(), interpreter, vscode.workspace.isTrusted));
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      status.setTrusted(true);
      void client.updateSettings(serverSettings(currentSettings(), interpreter, true));
    }),
  );
  const pythonChange = await onPythonInterpreterChange(restartInBackground);
  if (pythonChange) {
    context.subscriptions.push(pythonChange);
  }
  restartInBackground();
}

export async function deactivate(): Promise<void> {
  // awaited by VS Code, so the server (and its worker) shut down before the extension host exits
  await stopClient?.();
}

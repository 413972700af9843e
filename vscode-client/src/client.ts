// The language client: starts `<interpreter> -m fxlens serve --stdio` with the bundled server code on
// PYTHONPATH, keeps the server's settings in step (trust included), and relays fxlens notifications.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { CLIENT_SHOW_KERNEL } from "./core/kernelCode";
import { redirectLenses, redirectLens, SERVER_SHOW_GRAPH } from "./core/lensCommands";
import { passTarget, PassTarget, SERVER_RUN_PASS } from "./core/passPreview";
import { RestartBudget } from "./core/restartBudget";
import { FxlensSettings } from "./core/settings";
import { parseServerStatus, ServerState } from "./core/statusText";

export interface ClientEvents {
  status(state: ServerState, message: string): void;
  reportChanged(uri: string, version: number | undefined): void;
  // someone ran the server's fxlens.showGraph as a VS Code command: show what it returned
  graphShown(args: unknown[], result: unknown): void;
  // a "Run pass …" code action: the graph view runs it and shows the preview (instead of the
  // read-only markdown document the server opens for editors without a graph view)
  passRequested(target: PassTarget): Promise<unknown>;
}

export class FxlensClient {
  private client: LanguageClient | undefined;
  private settings: FxlensSettings | undefined;
  private readonly restarts = new RestartBudget();

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.OutputChannel,
    private readonly events: ClientEvents,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async start(interpreter: string, settings: FxlensSettings): Promise<void> {
    await this.stop();
    this.settings = settings;
    this.restarts.reset();
    const client = new LanguageClient("fxlens", "fxlens", this.serverOptions(interpreter), this.clientOptions());
    client.onDidChangeState(({ newState }) => {
      if (newState === State.Running) {
        this.events.status("idle", "");
      } else if (newState === State.Stopped) {
        this.events.status("stopped", "");
      }
    });
    client.onNotification("fxlens/status", (params: unknown) => {
      const { state, message } = parseServerStatus(params);
      this.events.status(state, message);
    });
    client.onNotification("fxlens/reportChanged", (params: { uri?: string; version?: number }) => {
      if (typeof params?.uri === "string") {
        this.events.reportChanged(params.uri, params.version);
      }
    });
    this.client = client;
    this.events.status("starting", `${interpreter} -m fxlens serve`);
    this.log.appendLine(`[fxlens] starting: ${interpreter} -m fxlens serve --stdio`);
    await client.start();
    if (this.settings !== settings && this.client === client) {
      // changed while the server started (trust granted on a loaded machine): it may have asked before
      await this.updateSettings(this.settings!);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.state !== State.Stopped) {
      await client.stop().catch((error) => this.log.appendLine(`[fxlens] stopping the server: ${String(error)}`));
    }
  }

  /** Tells a running server new settings (they are also what it gets when it asks for them). */
  async updateSettings(settings: FxlensSettings): Promise<void> {
    this.settings = settings;
    if (this.running) {
      this.log.appendLine(`[fxlens] settings sent to the server: ${JSON.stringify(settings)}`);
      await this.client!.sendNotification(DidChangeConfigurationNotification.type, { settings: { fxlens: settings } });
    }
  }

  /** Runs a server command through workspace/executeCommand. */
  async execute(command: string, args: unknown[]): Promise<unknown> {
    if (!this.client || !this.running) {
      throw new Error("the fxlens server is not running (see the fxlens log)");
    }
    return this.client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  }

  private serverOptions(interpreter: string): ServerOptions {
    const libs = this.context.asAbsolutePath(path.join("bundled", "libs"));
    const env = { ...process.env };
    // The .vsix carries fxlens and its pure-Python dependencies; without them (a development checkout)
    // fxlens must be installed in the interpreter.
    if (fs.existsSync(libs)) {
      env.PYTHONPATH = [libs, env.PYTHONPATH].filter(Boolean).join(path.delimiter);
    }
    // TransportKind.stdio makes the client append --stdio.
    return { command: interpreter, args: ["-m", "fxlens", "serve"], transport: TransportKind.stdio, options: { env } };
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
        // Jupyter notebooks' Python cells: the server declares notebookDocumentSync, so the client sends
        // each notebook whole (notebookDocument/*) and asks for lenses, hovers, ... per cell
        { notebook: "jupyter-notebook", language: "python" },
      ],
      outputChannel: this.log,
      initializationOptions: { fxlens: this.settings },
      // the hover's "show code" link runs this command, and only this one
      markdown: { isTrusted: { enabledCommands: [CLIENT_SHOW_KERNEL] } },
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => this.onServerClosed(),
      },
      middleware: {
        provideCodeLenses: async (document, token, next) => redirectLenses(await next(document, token)),
        resolveCodeLens: async (lens, token, next) => {
          const resolved = await next(lens, token);
          return resolved ? redirectLens(resolved) : resolved;
        },
        executeCommand: async (command, args, next) => {
          const target = command === SERVER_RUN_PASS ? passTarget(args) : undefined;
          if (target) {
            return this.events.passRequested(target);
          }
          const result = await next(command, args);
          if (command === SERVER_SHOW_GRAPH) {
            this.events.graphShown(args, result);
          }
          return result;
        },
        workspace: {
          // Answer the server's workspace/configuration with the effective settings, so that an
          // untrusted workspace stays at execution "off" whatever the user's settings say.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, index) => {
              if (item.section === "fxlens") {
                return this.settings;
              }
              if (item.section?.startsWith("fxlens.") && this.settings) {
                return this.settings[item.section.slice("fxlens.".length) as keyof FxlensSettings];
              }
              return answers[index];
            });
          },
        },
      },
    };
  }

  private onServerClosed() {
    if (this.restarts.take(Date.now())) {
      return { action: CloseAction.Restart };
    }
    return {
      action: CloseAction.DoNotRestart,
      message: `The fxlens server stopped ${this.restarts.maxRestarts + 1} times in a few minutes; it stays off. ` +
        "See the fxlens log, then run 'fxlens: Restart'.",
    };
  }
}

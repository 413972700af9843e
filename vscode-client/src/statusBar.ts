// The fxlens status bar item: idle / tracing / error from the server, restricted when the workspace
// is untrusted, unavailable when no usable interpreter; a click opens the log.
import * as vscode from "vscode";
import { ServerState, StatusInput, statusView } from "./core/statusText";

export const SHOW_OUTPUT_COMMAND = "fxlens.showOutput";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("fxlens.status", vscode.StatusBarAlignment.Right, 100);
  private state: StatusInput = { server: "starting", message: "", trusted: vscode.workspace.isTrusted };

  constructor() {
    this.item.name = "fxlens";
    this.item.command = SHOW_OUTPUT_COMMAND;
    this.render();
    this.item.show();
  }

  setServer(server: ServerState, message = ""): void {
    this.update({ server, message });
  }

  setTrusted(trusted: boolean): void {
    this.update({ trusted });
  }

  /** A reason fxlens cannot run at all, or undefined once it can. */
  setUnavailable(reason: string | undefined): void {
    this.update({ unavailable: reason });
  }

  private update(change: Partial<StatusInput>): void {
    this.state = { ...this.state, ...change };
    this.render();
  }

  private render(): void {
    const view = statusView(this.state);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

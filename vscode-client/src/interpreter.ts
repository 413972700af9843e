// Finds the interpreter fxlens runs in: the Python extension's choice (a soft dependency, through
// its public environments API), else the fxlens.python setting, else python3; and probes it once.
import { execFile } from "child_process";
import * as vscode from "vscode";
import { chooseInterpreter, InterpreterChoice, judgeProbe, PROBE_SCRIPT, ProbeResult } from "./core/interpreterChoice";

// The part of ms-python.python's exported API we use (its `environments` namespace).
interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}
interface PythonExtensionApi {
  readonly environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION_ID = "ms-python.python";

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch {
    return undefined; // a broken Python extension must not stop fxlens: fall back to the setting
  }
}

async function interpreterFromPythonExtension(log: vscode.OutputChannel): Promise<string | undefined> {
  const environments = (await pythonExtensionApi())?.environments;
  if (!environments) {
    return undefined;
  }
  try {
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch (error) {
    log.appendLine(`[fxlens] could not ask the Python extension for its interpreter: ${String(error)}`);
    return undefined;
  }
}

export async function resolveInterpreter(setting: string, log: vscode.OutputChannel): Promise<InterpreterChoice> {
  return chooseInterpreter(await interpreterFromPythonExtension(log), setting);
}

/** Calls `listener` when the Python extension's selected interpreter changes (if it is installed). */
export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const environments = (await pythonExtensionApi())?.environments;
  return environments?.onDidChangeActiveEnvironmentPath(() => listener());
}

/** Runs the interpreter once to learn its version and whether torch is installed (without importing it). */
export function probeInterpreter(path: string): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(path, ["-c", PROBE_SCRIPT], { timeout: 30_000 }, (error, stdout, stderr) => {
      const spawnError = error ? (stderr.trim() || error.message).split("\n").pop() : undefined;
      resolve(judgeProbe(path, error ? undefined : stdout, spawnError));
    });
  });
}

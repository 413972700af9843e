// Which Python runs the fxlens server and worker: the Python extension's choice for the workspace,
// else the fxlens.python setting, else python3 on PATH.

export type InterpreterSource = "python-extension" | "setting" | "default";

export interface InterpreterChoice {
  path: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = "python3";

export function chooseInterpreter(fromPythonExtension: string | undefined, setting: string): InterpreterChoice {
  if (fromPythonExtension && fromPythonExtension.trim()) {
    return { path: fromPythonExtension.trim(), source: "python-extension" };
  }
  if (setting.trim()) {
    return { path: setting.trim(), source: "setting" };
  }
  return { path: DEFAULT_INTERPRETER, source: "default" };
}

/** Result of running the interpreter once with PROBE_SCRIPT (or failing to). */
export interface ProbeResult {
  ok: boolean;
  // what the person sees in the one notification when ok is false, and how to fix it
  problem?: string;
  fix?: string;
  version?: string;
  torch?: string;
}

// Finds torch without importing it (an import costs ~2 s); prints one JSON line.
export const PROBE_SCRIPT =
  "import json, sys, importlib.util, importlib.metadata as m\n" +
  "spec = importlib.util.find_spec('torch')\n" +
  "try:\n    v = m.version('torch') if spec else None\nexcept Exception:\n    v = 'unknown' if spec else None\n" +
  "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'torch': v}))\n";

export const MINIMUM_PYTHON: [number, number] = [3, 10];

/** Judges the probe's output (or the error spawning it) for interpreter `path`. */
export function judgeProbe(path: string, stdout: string | undefined, spawnError: string | undefined): ProbeResult {
  const pickAnother = "select another interpreter (Python: Select Interpreter) or set fxlens.python";
  if (spawnError !== undefined || stdout === undefined) {
    return { ok: false, problem: `cannot run the Python interpreter '${path}' (${spawnError ?? "no output"})`, fix: pickAnother };
  }
  let parsed: { version?: string; torch?: string | null };
  try {
    parsed = JSON.parse(stdout.trim().split("\n").pop() ?? "");
  } catch {
    return { ok: false, problem: `'${path}' did not answer like a Python interpreter`, fix: pickAnother };
  }
  const version = parsed.version ?? "0.0.0";
  const [major, minor] = version.split(".").map(Number);
  if (major < MINIMUM_PYTHON[0] || (major === MINIMUM_PYTHON[0] && minor < MINIMUM_PYTHON[1])) {
    return { ok: false, version, problem: `'${path}' is Python ${version}; fxlens needs ${MINIMUM_PYTHON.join(".")} or newer`, fix: pickAnother };
  }
  if (!parsed.torch) {
    return {
      ok: false,
      version,
      problem: `torch is not installed for '${path}' (Python ${version})`,
      fix: `install it: ${path} -m pip install torch — or ${pickAnother}`,
    };
  }
  return { ok: true, version, torch: parsed.torch };
}

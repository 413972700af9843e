// fxlens settings as the server receives them (initializationOptions, didChangeConfiguration and
// workspace/configuration answers): typed, with the defaults of package.json, bad values replaced.

export type Execution = "safe" | "full" | "off";

export interface FxlensSettings {
  python: string;
  levels: string[];
  timeoutSeconds: number;
  execution: Execution;
  inlayHints: boolean;
  memoryLimitMB: number;
  diffLens: boolean;
}

export const DEFAULT_SETTINGS: FxlensSettings = {
  python: "",
  levels: ["fx", "aten"],
  timeoutSeconds: 60,
  execution: "safe",
  inlayHints: false,
  memoryLimitMB: 4096,
  diffLens: false,
};

const EXECUTIONS: readonly Execution[] = ["safe", "full", "off"];

/** Reads the settings through `get(key)` (the `fxlens` configuration section). */
export function readSettings(get: (key: keyof FxlensSettings) => unknown): FxlensSettings {
  const python = get("python");
  const levels = get("levels");
  const timeout = get("timeoutSeconds");
  const execution = get("execution");
  const inlayHints = get("inlayHints");
  const memory = get("memoryLimitMB");
  const diffLens = get("diffLens");
  return {
    python: typeof python === "string" ? python.trim() : DEFAULT_SETTINGS.python,
    levels:
      Array.isArray(levels) && levels.length > 0 && levels.every((l) => typeof l === "string")
        ? [...levels]
        : [...DEFAULT_SETTINGS.levels],
    timeoutSeconds: typeof timeout === "number" && timeout > 0 ? timeout : DEFAULT_SETTINGS.timeoutSeconds,
    execution: EXECUTIONS.includes(execution as Execution) ? (execution as Execution) : DEFAULT_SETTINGS.execution,
    inlayHints: typeof inlayHints === "boolean" ? inlayHints : DEFAULT_SETTINGS.inlayHints,
    memoryLimitMB: typeof memory === "number" && memory > 0 ? memory : DEFAULT_SETTINGS.memoryLimitMB,
    diffLens: typeof diffLens === "boolean" ? diffLens : DEFAULT_SETTINGS.diffLens,
  };
}

/**
 * What the server is told: the interpreter actually chosen (so the worker uses the same one), and no
 * execution at all in an untrusted workspace, whatever the settings say.
 */
export function serverSettings(settings: FxlensSettings, interpreter: string, trusted: boolean): FxlensSettings {
  return { ...settings, python: interpreter, execution: trusted ? settings.execution : "off" };
}

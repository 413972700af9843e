// fxlens settings as the server receives them (initializationOptions, didChangeConfiguration and
// workspace/configuration answers): typed, with the defaults of package.json, bad values replaced.
// The settings are package.json's `contributes.configuration`, which scripts/generate.py writes from
// server/fxlens/lsp/settings.py: this file names none of them.

import { contributes } from "../../package.json";

type Properties = typeof contributes.configuration.properties;
type Key<Name> = Name extends `fxlens.${infer K}` ? K : never;

export type FxlensSettings = { [K in Key<keyof Properties>]: Properties[`fxlens.${K}`]["default"] };

interface Schema {
  type: string;
  default: unknown;
  enum?: readonly unknown[];
}

const SCHEMAS: [string, Schema][] = Object.entries(contributes.configuration.properties).map(
  ([name, schema]) => [name.slice("fxlens.".length), schema as Schema]);

export const DEFAULT_SETTINGS = Object.fromEntries(
  SCHEMAS.map(([key, schema]) => [key, schema.default])) as FxlensSettings;

/** The value as the server gets it, or undefined when the schema refuses it (the default is used). */
function checked(schema: Schema, value: unknown): unknown {
  switch (schema.type) {
    case "string":
      if (schema.enum) {
        return schema.enum.includes(value) ? value : undefined;
      }
      return typeof value === "string" ? value.trim() : undefined;
    case "array":
      return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string") ? [...value] : undefined;
    case "number":
      return typeof value === "number" && value > 0 ? value : undefined;
    case "boolean":
      return typeof value === "boolean" ? value : undefined;
    default:
      return undefined;
  }
}

/** Reads the settings through `get(key)` (the `fxlens` configuration section). */
export function readSettings(get: (key: keyof FxlensSettings) => unknown): FxlensSettings {
  const copy = (value: unknown) => (Array.isArray(value) ? [...value] : value);
  return Object.fromEntries(SCHEMAS.map(([key, schema]) => {
    const value = checked(schema, get(key as keyof FxlensSettings));
    return [key, value === undefined ? copy(schema.default) : value];
  })) as FxlensSettings;
}

/**
 * What the server is told: the interpreter actually chosen (so the worker uses the same one), and no
 * execution at all in an untrusted workspace, whatever the settings say.
 */
export function serverSettings(settings: FxlensSettings, interpreter: string, trusted: boolean): FxlensSettings {
  return { ...settings, python: interpreter, execution: trusted ? settings.execution : "off" };
}

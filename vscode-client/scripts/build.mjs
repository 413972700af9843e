// Bundles the extension (Node, CommonJS, `vscode` external) and the graph page (browser, IIFE, with
// dagre inside: the webview loads nothing from outside) with esbuild; unit tests are bundled too.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readdirSync } from "fs";
import { dirname, join } from "path";
import { fileURLToPath } from "url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning", absWorkingDir: root };

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: ["webview/main.ts"],
    outfile: "dist/webview/main.js",
    platform: "browser",
    format: "iife",
    target: "chrome114",
  }),
  esbuild.build({
    ...common,
    sourcemap: true,
    minify: false,
    entryPoints: readdirSync(join(root, "test/unit")).filter((f) => f.endsWith(".test.ts")).map((f) => `test/unit/${f}`),
    outdir: "out/test/unit",
    platform: "node",
    format: "cjs",
    target: "node20",
  }),
  // the browser test serves the page with the extension's own HTML and CSP
  esbuild.build({
    ...common,
    entryPoints: ["src/core/webviewHtml.ts"],
    outfile: "out/test/webviewHtml.cjs",
    platform: "node",
    format: "cjs",
  }),
]);
mkdirSync(join(root, "dist/webview"), { recursive: true });
copyFileSync(join(root, "webview/main.css"), join(root, "dist/webview/main.css"));

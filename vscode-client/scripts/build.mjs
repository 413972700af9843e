// Bundles the extension (Node, CommonJS, `vscode` external) and the graph page (browser, IIFE, with
// elkjs inside, its layout worker's script as text: the webview loads nothing from outside) with
// esbuild; unit tests are bundled too.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from "fs";
import { dirname, join } from "path";
import { fileURLToPath } from "url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
// `import source from "elk-worker-source"`: elkjs's worker script as a string (webview/elkRunner.ts)
const elkWorkerSource = {
  name: "elk-worker-source",
  setup(build) {
    build.onResolve({ filter: /^elk-worker-source$/ }, () => ({ path: join(root, "node_modules/elkjs/lib/elk-worker.min.js"), namespace: "elk-worker-text" }));
    build.onLoad({ filter: /.*/, namespace: "elk-worker-text" }, (args) => ({ contents: readFileSync(args.path, "utf8"), loader: "text" }));
  },
};
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
    plugins: [elkWorkerSource],
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

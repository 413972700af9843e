// Puts the fxlens server package and its pure-Python dependencies into bundled/libs, which the
// .vsix carries and the extension puts on PYTHONPATH: the user's environment needs only torch.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const libs = join(root, "bundled", "libs");
const serverPackage = join(root, "..", "server", "fxlens");
const python = process.env.FXLENS_PACKAGE_PYTHON ?? "python3";

// Exact versions (universal py3 wheels, so any user Python >= 3.10 can import them).
// exceptiongroup is what cattrs needs on Python 3.10.
const REQUIREMENTS = [
  "pygls==2.1.1",
  "lsprotocol==2025.0.0",
  "cattrs==26.2.1",
  "attrs==26.1.0",
  "typing_extensions==4.15.0",
  "exceptiongroup==1.3.2",
];

if (!existsSync(join(serverPackage, "__init__.py"))) {
  throw new Error(`fxlens server package not found at ${serverPackage}`);
}
rmSync(join(root, "bundled"), { recursive: true, force: true });
execFileSync(
  python,
  ["-m", "pip", "install", "-qq", "--disable-pip-version-check", "--root-user-action=ignore", "--no-deps", "--no-compile", "--only-binary=:all:",
    "--target", libs, ...REQUIREMENTS],
  { stdio: "inherit" },
);
cpSync(serverPackage, join(libs, "fxlens"), {
  recursive: true,
  filter: (source) => !source.includes("__pycache__") && !source.endsWith(".pyc"),
});
// pip --target leaves a bin/ for console scripts; the extension runs `python -m fxlens`.
rmSync(join(libs, "bin"), { recursive: true, force: true });
writeFileSync(join(root, "bundled", "REQUIREMENTS.txt"), REQUIREMENTS.join("\n") + "\n");
console.log(`bundled fxlens and ${REQUIREMENTS.length} dependencies into ${libs}`);

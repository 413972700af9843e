// The README shipped inside the .vsix: README.md with its screenshots linked at the repository
// (package.json's `repository`), since the Marketplace and Open VSX show the page outside the repo.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const repository = manifest.repository.url.replace(/\.git$/, "");
const readme = readFileSync(join(root, "README.md"), "utf8");
const linked = readme.replace(/!\[([^\]]*)\]\((?!https?:)([^)]+)\)/g,
  (_, alt, path) => `![${alt}](${repository}/raw/HEAD/vscode-client/${path})`);
mkdirSync(join(root, "dist"), { recursive: true });
writeFileSync(join(root, "dist", "README.md"), linked);

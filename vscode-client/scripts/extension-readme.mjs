// The README shipped inside the .vsix: README.md with its screenshots as plain text, because the
// package has no public repository URL to resolve relative image links against (vsce refuses them).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const withoutImages = readme.replace(/!\[([^\]]*)\]\(([^)]+)\)/g, "(screenshot: vscode-client/$2)");
mkdirSync(join(root, "dist"), { recursive: true });
writeFileSync(join(root, "dist", "README.md"), withoutImages);

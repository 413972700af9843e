#!/usr/bin/env bash
# What the VS Code tests (tests/e2e/test_vscode.py) need: Debian's Chromium and code-server's build
# prerequisites, the extension's npm packages, code-server 4.100.3, and the packaged fxlens.vsix.
# Idempotent: each step is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

missing=()
for package in chromium libkrb5-dev pkg-config ripgrep; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-vscode: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cd vscode-client
# npm ci wipes node_modules: run it only when the lockfile changed since the last run.
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.fxlens-lock-hash 2>/dev/null)" != "$lock_hash" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.fxlens-lock-hash
fi

bash scripts/install-code-server.sh
# Packaging takes half a minute: done again only when a file the .vsix is built from is newer than it (its node
# packages when the lockfile changed, the extension's sources, the server's).
built_from_newer() {
  find . ../server/fxlens \( -path ./node_modules -o -path ./out -o -path ./dist -o -path ./bundled \
    -o -path ./test-artifacts -o -name __pycache__ \) -prune -o -type f -newer fxlens.vsix -print -quit | grep -q .
}
if [ ! -e fxlens.vsix ] || [ node_modules/.fxlens-lock-hash -nt fxlens.vsix ] || built_from_newer; then
  npm run --silent package >/dev/null
fi
echo "setup-vscode: $(ls -l fxlens.vsix | awk '{print $5}') bytes in vscode-client/fxlens.vsix"

#!/usr/bin/env bash
# Installs code-server 4.100.3 (the last release that runs on Node 20) from the npm registry, offline
# apart from the registry: its ripgrep dependency would download a binary from outside, so we pre-fill
# that download cache with Debian's rg. Idempotent: does nothing when the right version is installed.
# Usage: install-code-server.sh [PREFIX]   (default: $FXLENS_CODE_SERVER_DIR or ~/.cache/fxlens/code-server-4.100.3)
set -euo pipefail

VERSION=4.100.3
PREFIX="${1:-${FXLENS_CODE_SERVER_DIR:-$HOME/.cache/fxlens/code-server-$VERSION}}"
BIN="$PREFIX/node_modules/.bin/code-server"

installed_version() {
  # Read the version from package.json: running `code-server --version` would write a config into HOME.
  node -p "require('$PREFIX/node_modules/code-server/package.json').version" 2>/dev/null || true
}

if [ -x "$BIN" ] && [ "$(installed_version)" = "$VERSION" ]; then
  echo "code-server $VERSION already installed in $PREFIX"
  exit 0
fi

for tool in rg pkg-config; do
  command -v "$tool" >/dev/null || { echo "install-code-server: '$tool' missing (apt-get install ripgrep pkg-config libkrb5-dev)" >&2; exit 1; }
done
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || {
  echo "install-code-server: Kerberos headers missing (apt-get install libkrb5-dev)" >&2; exit 1; }

# @vscode/ripgrep 1.15.11 looks for this archive in its cache before downloading.
tmp="${TMPDIR:-/tmp}"
cache="$tmp/vscode-ripgrep-cache-1.15.11"
archive="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -s "$archive" ]; then
  mkdir -p "$cache"
  staging="$(mktemp -d)"
  cp "$(command -v rg)" "$staging/rg"
  tar -czf "$archive" -C "$staging" rg
  rm -rf "$staging"
fi

mkdir -p "$PREFIX"
cd "$PREFIX"
[ -f package.json ] || echo '{"name": "fxlens-code-server", "private": true}' > package.json
npm_config_yes=true npm_config_unsafe_perm=true npm install --no-audit --no-fund --loglevel=error \
  "code-server@$VERSION"
echo "code-server $(installed_version) installed in $PREFIX"

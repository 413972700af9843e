#!/usr/bin/env bash
# Neovim for tests/e2e/test_neovim.py (Debian's 0.7.2 is enough). Idempotent: does nothing if nvim exists.
set -euo pipefail
if command -v nvim >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y neovim

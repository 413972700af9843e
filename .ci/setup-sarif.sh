#!/usr/bin/env bash
# The SARIF 2.1.0 JSON schema the format tests validate against (tests/ci/test_ci_formats.py), from the
# npm package that bundles it; installed offline-able, no install scripts run. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/sarif-schema"
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.fxlens-lock-hash 2>/dev/null)" != "$lock_hash" ]; then
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.fxlens-lock-hash
fi

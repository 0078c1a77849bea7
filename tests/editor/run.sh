#!/usr/bin/env bash
# run.sh — runs the VS Code grammar test (grammar.test.js beside this file).
# Installs the extension's pinned npm dev dependencies (package-lock.json) into
# editors/vscode/node_modules first when they are missing or stale.
# Exit 77 (skipped) when node or npm is not installed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ext=$root/editors/vscode

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "editor test: SKIPPED: '$tool' not found (install nodejs and npm to run it)"
    exit 77
  fi
done

# npm writes node_modules/.package-lock.json: reinstall when it is missing or
# older than the committed lock.
stamp=$ext/node_modules/.package-lock.json
if [[ ! -f $stamp || $ext/package-lock.json -nt $stamp ]]; then
  echo "editor test: installing npm dependencies into editors/vscode/node_modules"
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
fi
exec node "$root/tests/editor/grammar.test.js" "$@"

#!/usr/bin/env bash
# run.sh — runs the VS Code extension tests beside this file:
# grammar.test.js (colouring: golden, keywords, builtins, keyword arguments,
# every example/stdlib/golden program) and extension.test.js (manifest,
# snippets, task provider, problem matcher against etlc, `vsce package`).
# Installs the extension's pinned npm dev dependencies (package-lock.json)
# into editors/vscode/node_modules first when they are missing or stale:
# install scripts are not run and optional native packages (keytar, the
# vsce-sign binaries, used only for publishing and signing) are left out.
# etlc: $ETLC, else build/compiler/etlc (without it the etlc checks print
# why they skip). Arguments go to grammar.test.js (e.g. --update).
# Exit 77 (skipped) when node or npm is not installed, or node is older
# than 20.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ext=$root/editors/vscode

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "editor test: SKIPPED: '$tool' not found (install nodejs and npm to run it)"
    exit 77
  fi
done
# @vscode/vsce (the .vsix check) needs node 20 or newer: Debian 12's
# nodejs is 18, where `vsce package` fails with "File is not defined".
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
  echo "editor test: SKIPPED: node $(node --version) is older than 20, which @vscode/vsce needs" \
    "(Debian 12 ships 18; install node 20 or newer, e.g. from nodejs.org, to run it)"
  exit 77
fi

# npm writes node_modules/.package-lock.json: reinstall when it is missing or
# older than the committed lock.
stamp=$ext/node_modules/.package-lock.json
if [[ ! -f $stamp || $ext/package-lock.json -nt $stamp ]]; then
  echo "editor test: installing npm dependencies into editors/vscode/node_modules"
  (cd "$ext" && npm ci --no-audit --no-fund --ignore-scripts --omit=optional --prefer-offline --loglevel=error)
fi
status=0
node "$root/tests/editor/grammar.test.js" "$@" || status=1
if [[ " $* " != *" --update "* ]]; then
  node "$root/tests/editor/extension.test.js" || status=1
fi
exit $status

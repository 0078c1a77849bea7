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
# than 18.17 (Debian 12's nodejs is 18.20).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ext=$root/editors/vscode

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "editor test: SKIPPED: '$tool' not found (install nodejs and npm to run it)"
    exit 77
  fi
done
# The packager, @vscode/vsce 2.32 with cheerio 1.0.0 (package.json pins
# both: vsce 3 and cheerio >= 1.1 pull in undici 7, which needs node 20 and
# fails on 18 with "File is not defined"), runs on node 18.17 or newer.
node_version=$(node -p 'process.versions.node')
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number);
              process.exit(a > 18 || (a == 18 && b >= 17) ? 0 : 1)'; then
  echo "editor test: SKIPPED: node $node_version is older than 18.17, which the pinned" \
    "@vscode/vsce 2.32 needs (Debian 12's nodejs is 18.20: apt-get install nodejs npm)"
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

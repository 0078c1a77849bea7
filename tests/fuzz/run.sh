#!/usr/bin/env bash
# tests/fuzz/run.sh - one short, deterministic libFuzzer run for ctest.
#
#   run.sh HARNESS WORKDIR [libFuzzer flags...] -- SEED_DIR...
#
# Starts from an empty WORKDIR/corpus (libFuzzer writes new inputs into its
# first corpus directory, never into the seed directories), fixed seed, one
# worker. Crash reproducers land in WORKDIR/ (crash-*, timeout-*, oom-*).
set -euo pipefail
harness=$1 work=$2
shift 2
flags=()
while (($#)) && [[ $1 != -- ]]; do flags+=("$1"); shift; done
(($#)) && shift
rm -rf "$work"
mkdir -p "$work/corpus"
exec "$harness" -seed=1 -entropic=0 -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$work/" "${flags[@]}" "$work/corpus" "$@"

#!/usr/bin/env bash
# fuzz.sh — long libFuzzer runs of the harnesses in tests/fuzz (see its README).
#
#   scripts/fuzz.sh [-t SECONDS] [-j WORKERS] [-n] [HARNESS...]
#
# HARNESS: frontend, backend, artifact (default: all three, one after the
# other). Each runs for SECONDS (default 3600) with WORKERS processes
# (libFuzzer's -fork; default 1), from its corpus in fuzz-corpus/HARNESS/corpus
# (git-ignored, kept between runs and seeded from the suite's seed corpus);
# crash, timeout and OOM reproducers land in fuzz-corpus/HARNESS/, the log in
# fuzz-corpus/HARNESS/log. The harnesses are built first in build-fuzz/:
# clang-14, ASan + UBSan as in build-asan/, but optimised (RelWithDebInfo),
# which runs several times the inputs per second of the suite's -O0 tree
# (-n skips the build, e.g. for several runs in parallel on one tree).
# Turn each finding into a file in tests/fuzz/regressions/HARNESS/ and fix it.
#
# Environment: ETL_JOBS (build jobs), ETL_FUZZ_FLAGS (extra libFuzzer flags).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
secs=3600 build=1 workers=1
harnesses=()
while (($#)); do
  case $1 in
    -t) secs=$2; shift 2 ;;
    -j) workers=$2; shift 2 ;;
    -n) build=0; shift ;;
    -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    frontend | backend | artifact) harnesses+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#harnesses[@]})) || harnesses=(frontend backend artifact)

tree=build-fuzz
command -v clang++-14 >/dev/null || { echo "fuzz.sh: needs clang-14 (apt-get install clang-14)" >&2; exit 2; }
if ((build)); then
  scripts/setup.sh --deps-only
  # The suite's sanitizer arguments (scripts/etl.sh), optimised.
  args=$(scripts/etl.sh asan-args | sed 's/-DCMAKE_BUILD_TYPE=Debug/-DCMAKE_BUILD_TYPE=RelWithDebInfo/')
  # shellcheck disable=SC2086
  cmake -S . -B "$tree" $args -DETL_FUZZ=ON >/dev/null
  targets=()
  for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
  [[ " ${harnesses[*]} " == *" artifact "* ]] && targets+=(--target etl_runtime_artifacts)
  cmake --build "$tree" -j "${ETL_JOBS:-$(nproc)}" "${targets[@]}"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
no_aslr=()
setarch "$(uname -m)" -R true 2>/dev/null && no_aslr=(setarch "$(uname -m)" -R)
parallel=()
((workers > 1)) && parallel=(-fork="$workers")

for h in "${harnesses[@]}"; do
  dir=fuzz-corpus/$h
  mkdir -p "$dir/corpus"
  seeds=("$tree/tests/fuzz/seeds/source")
  dict=(-dict="$tree/tests/fuzz/etl.dict")
  if [[ $h == artifact ]]; then
    seeds=(tests/fuzz/seeds/artifact "$tree/tests/artifacts")
    dict=()
  fi
  [[ -d tests/fuzz/regressions/$h ]] && seeds+=("tests/fuzz/regressions/$h")
  echo "== fuzz_$h for $secs s, $workers worker(s) (corpus $dir/corpus, log $dir/log)"
  rc=0
  # shellcheck disable=SC2086
  "${no_aslr[@]}" "$tree/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=60 "${parallel[@]}" \
    -rss_limit_mb=4096 -print_final_stats=1 -entropic=0 -artifact_prefix="$dir/" \
    "${dict[@]}" ${ETL_FUZZ_FLAGS:-} "$dir/corpus" "${seeds[@]}" \
    >"$dir/log" 2>&1 || rc=$?
  grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true
  grep -E '^stat::' "$dir/log" || true
  ls "$dir" | grep -E '^(crash|timeout|oom|leak|slow-unit)-' | sed "s|^|  finding: $dir/|" || true
  echo "fuzz_$h exit $rc"
done

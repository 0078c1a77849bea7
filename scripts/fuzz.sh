#!/usr/bin/env bash
# fuzz.sh — long libFuzzer runs of the harnesses in tests/fuzz (see its README).
#
#   scripts/fuzz.sh [-t SECONDS] [-n] [HARNESS...]
#
# HARNESS: frontend, backend, artifact (default: all three, one after the
# other). Each runs for SECONDS (default 3600) with one worker, from its
# corpus in fuzz-corpus/HARNESS/corpus (git-ignored, kept between runs and
# seeded from the suite's seed corpus); crash, timeout and OOM reproducers
# land in fuzz-corpus/HARNESS/, the log in fuzz-corpus/HARNESS/log. Builds
# build-asan/ with clang and the harnesses first (as scripts/etl.sh test does;
# -n skips that, e.g. for several runs in parallel on one tree).
# Turn each finding into a file in tests/fuzz/regressions/HARNESS/ and fix it.
#
# Environment: ETL_JOBS (build jobs), ETL_FUZZ_FLAGS (extra libFuzzer flags).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
secs=3600 build=1
harnesses=()
while (($#)); do
  case $1 in
    -t) secs=$2; shift 2 ;;
    -n) build=0; shift ;;
    -h | --help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    frontend | backend | artifact) harnesses+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#harnesses[@]})) || harnesses=(frontend backend artifact)

command -v clang++-14 >/dev/null || { echo "fuzz.sh: needs clang-14 (apt-get install clang-14)" >&2; exit 2; }
if ((build)); then
  ETL_BUILD_DIR=build-asan ETL_CMAKE_ARGS="${ETL_CMAKE_ARGS:-} $(scripts/etl.sh asan-args)" \
    scripts/setup.sh
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
no_aslr=()
setarch "$(uname -m)" -R true 2>/dev/null && no_aslr=(setarch "$(uname -m)" -R)

for h in "${harnesses[@]}"; do
  dir=fuzz-corpus/$h
  mkdir -p "$dir/corpus"
  seeds=(build-asan/tests/fuzz/seeds/source)
  dict=(-dict=tests/fuzz/etl.dict)
  if [[ $h == artifact ]]; then
    seeds=(tests/fuzz/seeds/artifact build-asan/tests/artifacts)
    dict=()
  fi
  [[ -d tests/fuzz/regressions/$h ]] && seeds+=("tests/fuzz/regressions/$h")
  echo "== fuzz_$h for $secs s (corpus $dir/corpus, log $dir/log)"
  rc=0
  # shellcheck disable=SC2086
  "${no_aslr[@]}" "build-asan/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 -entropic=0 -artifact_prefix="$dir/" \
    "${dict[@]}" ${ETL_FUZZ_FLAGS:-} "$dir/corpus" "${seeds[@]}" \
    >"$dir/log" 2>&1 || rc=$?
  grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true
  grep -E '^stat::' "$dir/log" || true
  ls "$dir" | grep -E '^(crash|timeout|oom|leak|slow-unit)-' | sed "s|^|  finding: $dir/|" || true
  echo "fuzz_$h exit $rc"
done

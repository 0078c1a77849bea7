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
# fuzz-corpus/HARNESS/log. Two trees:
#   build-fuzz/  the harness that fuzzes: clang-14, optimised, UBSan only
#                (no ASan allocator or shadow checks per input); figures in
#                tests/fuzz/README.md.
#   build-asan/  the suite's ASan + UBSan harness: at the end every input of
#                the corpus (each one brought new coverage) runs once under
#                it (log: fuzz-corpus/HARNESS/asan.log), so memory errors
#                that do not crash are still found.
# -n skips building both (e.g. for several runs in parallel on one tree).
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
    -h | --help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    frontend | backend | artifact) harnesses+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#harnesses[@]})) || harnesses=(frontend backend artifact)

command -v clang++-14 >/dev/null || { echo "fuzz.sh: needs clang-14 (apt-get install clang-14)" >&2; exit 2; }

# build TREE CMAKE_ARGS: configures TREE and builds the harnesses in it (and
# the artifacts that are fuzz_artifact's seeds).
build() {
  local tree=$1 args=$2 targets=() h
  # shellcheck disable=SC2086
  cmake -S . -B "$tree" $args >/dev/null
  for h in "${harnesses[@]}"; do targets+=(--target "fuzz_$h"); done
  [[ " ${harnesses[*]} " == *" artifact "* ]] && targets+=(--target etl_runtime_artifacts)
  cmake --build "$tree" -j "${ETL_JOBS:-$(nproc)}" "${targets[@]}"
}

if ((build)); then
  scripts/setup.sh --deps-only
  asan_args=$(scripts/etl.sh asan-args) # the suite's: clang-14, ASan + UBSan, -O0, fuzz
  fast_args=${asan_args/-DETL_SANITIZE=address,undefined/-DETL_SANITIZE=undefined}
  build build-fuzz "${fast_args/-DCMAKE_BUILD_TYPE=Debug/-DCMAKE_BUILD_TYPE=RelWithDebInfo}"
  build build-asan "$asan_args"
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
  seeds=(build-fuzz/tests/fuzz/seeds/source)
  dict=(-dict=build-fuzz/tests/fuzz/etl.dict)
  if [[ $h == artifact ]]; then
    seeds=(tests/fuzz/seeds/artifact build-fuzz/tests/artifacts)
    dict=()
  fi
  [[ -d tests/fuzz/regressions/$h ]] && seeds+=("tests/fuzz/regressions/$h")
  echo "== fuzz_$h for $secs s, $workers worker(s) (corpus $dir/corpus, log $dir/log)"
  rc=0
  # shellcheck disable=SC2086
  "${no_aslr[@]}" "build-fuzz/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=60 \
    "${parallel[@]}" -rss_limit_mb=4096 -print_final_stats=1 -entropic=0 \
    -artifact_prefix="$dir/" "${dict[@]}" ${ETL_FUZZ_FLAGS:-} "$dir/corpus" "${seeds[@]}" \
    >"$dir/log" 2>&1 || rc=$?
  grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true
  grep -E '^stat::' "$dir/log" || true
  echo "-- every corpus input once under ASan (build-asan/, log $dir/asan.log)"
  arc=0
  "${no_aslr[@]}" "build-asan/tests/fuzz/fuzz_$h" -runs=0 -timeout=60 -rss_limit_mb=4096 \
    -artifact_prefix="$dir/asan-" "$dir/corpus" >"$dir/asan.log" 2>&1 || arc=$?
  grep -E '^#[0-9]+' "$dir/asan.log" | tail -n 1 || true
  ls "$dir" | grep -E '^(asan-)?(crash|timeout|oom|leak|slow-unit)-' | sed "s|^|  finding: $dir/|" || true
  echo "fuzz_$h exit $rc, ASan replay exit $arc"
done

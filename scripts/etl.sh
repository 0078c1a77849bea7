#!/usr/bin/env bash
# etl.sh — the project's two entry points, each self-contained from a fresh clone.
#
#   scripts/etl.sh demo   set up, compile examples/rowsum and examples/moe with
#                         etlc for sm_90 and sim, run their C hosts (GPU when
#                         present, else sim); each checks its results
#   scripts/etl.sh test   set up, run every test: ctest on build/, the VS Code
#                         extension test, then the sanitizer builds:
#                         build-asan/ (address,undefined: runtime + compiler;
#                         with clang-14, also the libFuzzer harnesses of
#                         tests/fuzz, run briefly) and
#                         build-tsan/ (thread: runtime only)
#
# Environment: ETL_JOBS (default nproc); ETL_ASAN_COMPILER=0 builds only the
# runtime under ASan/UBSan (a full ASan build of the compiler is the slow part);
# ETL_SKIP_SANITIZERS=1 runs only the plain build's tests (quick local loop);
# ETL_FUZZ=0 builds build-asan/ with gcc and no fuzz harnesses.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${ETL_JOBS:-$(nproc)}
export ETL_JOBS=$jobs

log() { printf '\n== %s\n' "$*"; }

setup() { "$root/scripts/setup.sh" "$@"; }

cmd_demo() {
  setup
  local ex
  for ex in rowsum moe; do
    log "compiling examples/$ex/$ex.etl for sm_90,sim"
    build/compiler/etlc compile "examples/$ex/$ex.etl" -o "build/$ex.etlb" --target sm_90,sim
    log "running build/examples/${ex}_host build/$ex.etlb"
    "build/examples/${ex}_host" "build/$ex.etlb"
  done
}

# --- test -------------------------------------------------------------------
passed=0 failed=0 skipped=0 t_start=$SECONDS
failures=() skips=()

# Runs ctest in build dir $1 (under the command prefix $2..., if any) and adds
# its per-test results to the totals.
run_ctest() {
  local dir=$1 out rc=0
  shift
  out=$(mktemp)
  # --timeout is the default for tests that set no TIMEOUT of their own: a hung
  # launch must not eat CI's time. (pipefail: rc is ctest's status, not tee's.)
  "$@" ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 300 2>&1 | tee "$out" || rc=$?
  local line total nfail nskip
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$out" | tail -n 1 || true)
  if [[ -z $line ]]; then
    # No summary: ctest found no tests or could not run at all.
    failed=$((failed + 1)); failures+=("ctest in $dir/ (no test summary, exit $rc)")
  else
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
    nskip=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)[[:space:]]*$' "$out" || true)
    passed=$((passed + total - nfail - nskip)); failed=$((failed + nfail)); skipped=$((skipped + nskip))
    ((nfail == 0)) || failures+=("$nfail test(s) in $dir/: $(grep -E '\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)\)' "$out" | sed -E 's/^[[:space:]]*[0-9]+ - //' | tr '\n' ' ')")
    # ctest prints no output of a skipped test: name them here (each printed
    # its reason, e.g. "SKIPPED: ptxas not found", visible with ctest -V -R NAME).
    ((nskip == 0)) || skips+=("$nskip test(s) in $dir/: $(grep -E '\(Skipped\)' "$out" | sed -E 's/^[[:space:]]*[0-9]+ - //; s/[[:space:]]*\(Skipped\)[[:space:]]*$//' | tr '\n' ' ')(ctest -V -R NAME --test-dir $dir prints why)")
    if ((nfail == 0 && rc != 0)); then
      failed=$((failed + 1)); failures+=("ctest in $dir/ exited $rc")
    fi
  fi
  rm -f "$out"
}

# Runs one test program that is not registered with ctest (exit 77 = skipped).
run_program() {
  local name=$1 rc=0
  shift
  "$@" || rc=$?
  case $rc in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)); skips+=("$name") ;;
    *) failed=$((failed + 1)); failures+=("$name (exit $rc)") ;;
  esac
}

# CMake arguments of build-asan/. ASan/UBSan builds at -O0 (Debug): at -O2
# they compile 3-5x slower (LLVM- and ANTLR-heavy files: 17-30 s instead of
# 6-7 s each on 2 cores), at -O0 about as fast as the plain build, which keeps
# the compiler affordable here. With clang-14 installed the tree is built by
# clang with libFuzzer coverage (ETL_FUZZ), which adds the harnesses of
# tests/fuzz and their short ctest runs at no extra build tree; ETL_FUZZ=0
# keeps gcc and no harnesses.
asan_cmake_args() {
  local a="-DETL_SANITIZE=address,undefined -DETL_WERROR=OFF -DCMAKE_BUILD_TYPE=Debug"
  if [[ ${ETL_FUZZ:-1} == 1 ]] && command -v clang-14 >/dev/null && command -v clang++-14 >/dev/null; then
    a+=" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DETL_FUZZ=ON"
  else
    a+=" -DCMAKE_C_COMPILER=cc -DCMAKE_CXX_COMPILER=c++ -DETL_FUZZ=OFF"
  fi
  echo "$a"
}

# Configures and builds a sanitizer tree through setup.sh; counts a failure.
build_tree() {
  local dir=$1 args=$2 t0=$SECONDS want
  log "building $dir/ ($args)"
  # A tree configured with another compiler is rebuilt from scratch.
  want=$(sed -nE 's/.*-DCMAKE_CXX_COMPILER=([^ ]+).*/\1/p' <<<"$args")
  if [[ -n $want && -f $dir/CMakeCache.txt &&
    $(basename "$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")") != "$want" ]]; then
    echo "$dir/ was configured with another C++ compiler; starting it afresh"
    rm -rf "$dir"
  fi
  # The caller's ETL_CMAKE_ARGS come first; the sanitizer's own win on conflict.
  if ETL_BUILD_DIR=$dir ETL_CMAKE_ARGS="${ETL_CMAKE_ARGS:-} $args" setup; then
    echo "$dir/ built in $((SECONDS - t0)) s"
  else
    failed=$((failed + 1)); failures+=("build of $dir/")
    return 1
  fi
}

# Sanitizer runs go under `setarch -R` where allowed (ctest's children inherit
# it): TSan and ASan can fail to map their shadow memory with high mmap
# randomisation (vm.mmap_rnd_bits=32).
no_aslr=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
  no_aslr=(setarch "$(uname -m)" -R)
fi

summary() {
  local s
  log "summary ($((SECONDS - t_start)) s)"
  for s in "${skips[@]}"; do echo "skipped: $s"; done
  for s in "${failures[@]}"; do echo "FAILED: $s"; done
  # The last line, always in this form (tests/README.md, README.md).
  echo "$passed passed, $failed failed, $skipped skipped"
  ((failed == 0))
}

cmd_test() {
  t_start=$SECONDS
  if ! setup; then
    failed=$((failed + 1)); failures+=("setup/build of build/ (see the error above)")
    summary
    return
  fi
  log "ctest: build/"
  run_ctest build
  log "VS Code extension test"
  run_program "VS Code extension test (tests/editor)" tests/editor/run.sh

  if [[ ${ETL_SKIP_SANITIZERS:-0} == 1 ]]; then
    echo "sanitizer builds skipped (ETL_SKIP_SANITIZERS=1)"
  else
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_init_order=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
    # Warnings are the plain build's job: -Werror stays off under sanitizers.
    local asan_args
    asan_args=$(asan_cmake_args)
    if [[ ${ETL_ASAN_COMPILER:-1} == 0 ]]; then
      echo "ASan/UBSan: runtime tests only (ETL_ASAN_COMPILER=0); the compiler is not built under ASan"
      asan_args+=" -DETL_BUILD_COMPILER=OFF"
    else
      echo "ASan/UBSan: runtime and compiler tests (ETL_ASAN_COMPILER=0 builds only the runtime)"
    fi
    if [[ $asan_args == *-DETL_FUZZ=ON* ]]; then
      echo "ASan/UBSan: built by clang-14 with libFuzzer coverage; the fuzz_* tests run the harnesses of tests/fuzz"
    else
      local why="clang-14 not installed"
      [[ ${ETL_FUZZ:-1} == 0 ]] && why="ETL_FUZZ=0"
      echo "ASan/UBSan: built by gcc; fuzz_* tests skipped ($why)"
      skipped=$((skipped + 1)); skips+=("fuzz_* harnesses of tests/fuzz ($why; they need clang-14)")
    fi
    if build_tree build-asan "$asan_args"; then
      log "ctest: build-asan/"
      run_ctest build-asan "${no_aslr[@]}"
    fi
    # The plain build's etlc compiles the artifacts the runtime tests load
    # (tests/unit/runtime/programs), so compiled megakernels, dynamic
    # scheduling included, run under TSan too.
    local tsan_args="-DETL_SANITIZE=thread -DETL_BUILD_COMPILER=OFF -DETL_WERROR=OFF"
    [[ -x build/compiler/etlc ]] && tsan_args+=" -DETL_ETLC=$root/build/compiler/etlc"
    if build_tree build-tsan "$tsan_args"; then
      log "ctest: build-tsan/ (runtime tests)"
      run_ctest build-tsan "${no_aslr[@]}"
    fi
  fi
  summary
}

case ${1:-} in
  demo) cmd_demo ;;
  test) cmd_test ;;
  asan-args) asan_cmake_args ;; # for scripts/fuzz.sh
  *)
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    [[ ${1:-} == -h || ${1:-} == --help ]] || exit 2
    ;;
esac

#!/usr/bin/env bash
# cli.sh ETLRUN ARTIFACT WORKDIR
# etlrun's command line: every usage error exits 2 (CLI11's own codes are
# 105-115: the README promises 2), --help and --version exit 0, and bad
# --out / --check paths fail with 2 before the run (no "etlrun: ... on sim ... with"
# line, which is printed just before etlRun). ARTIFACT is rowsum's .etlb.
set -euo pipefail
etlrun=$1 art=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
run=(--device sim --dim M=4 --dim N=8)

# expect CODE WANT ARGS...: etlrun ARGS exits CODE and its output contains WANT
expect() {
  local code=$1 want=$2 rc=0
  shift 2
  "$etlrun" "$@" >"$dir/out.txt" 2>&1 || rc=$?
  if [[ $rc != "$code" ]] || ! grep -qF -- "$want" "$dir/out.txt"; then
    echo "FAIL: etlrun $* exited $rc, expected $code with: $want"; cat "$dir/out.txt"; exit 1
  fi
  echo "ok ($rc): etlrun $*"
}
# expect_before_run: as expect 2, and nothing ran
expect_before_run() {
  expect 2 "$@"
  if grep -q "^etlrun: .* on sim.* with " "$dir/out.txt"; then
    echo "FAIL: etlrun ${*:2} ran before reporting the error"; cat "$dir/out.txt"; exit 1
  fi
}

# usage errors: 2, with CLI11's message
expect 2 "artifact is required"
expect 2 "--bogus" "$art" --bogus
expect 2 "--device" "$art" --device
expect 2 "--rtol" "$art" --rtol abc
expect 2 "--sim-workers" "$art" --sim-workers -3
# --help, --version: 0
expect 0 "Exit status: 0 success, 1 a failed run or --check, 2 bad usage" --help
expect 0 "etlrun " --version
grep -qE '^etlrun [0-9]+\.[0-9]+\.[0-9]+ \(runtime [0-9]+\.[0-9]+\.[0-9]+\)$' "$dir/out.txt" ||
  { echo "FAIL: --version printed:"; cat "$dir/out.txt"; exit 1; }

# a good run writes y; the same seed gives the same y, which then checks
expect 0 "with M=4, N=8" "$art" "${run[@]}" --out y="$dir/y.npy"
expect 0 "check y: OK" "$art" "${run[@]}" --check y="$dir/y.npy"
# bad --out / --check paths: 2 before the run
expect_before_run "--out y: cannot write $dir/no/such/y.npy: directory $dir/no/such does not exist" \
  "$art" "${run[@]}" --out y="$dir/no/such/y.npy"
expect_before_run "--out y: cannot write $dir: $dir is a directory" \
  "$art" "${run[@]}" --out y="$dir"
expect_before_run "--out z: the program has no tensor 'z'" "$art" "${run[@]}" --out z="$dir/z.npy"
expect_before_run "--check y:" "$art" "${run[@]}" --check y="$dir/missing.npy"
expect_before_run "--check x: reference $dir/y.npy has shape [4], the tensor [4, 8]" \
  "$art" "${run[@]}" --check x="$dir/y.npy"
expect_before_run "--check 'y': expected NAME=VALUE" "$art" "${run[@]}" --check y
if [[ $(id -u) != 0 ]]; then # root writes anywhere
  mkdir -p "$dir/ro" && chmod a-w "$dir/ro"
  expect_before_run "directory $dir/ro: Permission denied" "$art" "${run[@]}" --out y="$dir/ro/y.npy"
  chmod u+w "$dir/ro"
fi
echo "etlrun command line: all checks passed"

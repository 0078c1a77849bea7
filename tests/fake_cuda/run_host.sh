#!/bin/sh
# run_host.sh MODE HOST ARTIFACT - an example host's CUDA path on the fake
# libcuda.so.1 (LD_LIBRARY_PATH set by ctest). The fake runs no PTX, so:
#   complete      kernels "finish" at once; the host must report every
#                 binding it checked as FAIL (no OK), name the fake device,
#                 and exit 1
#   launch_fails  cuLaunchKernel returns CUDA_ERROR_LAUNCH_FAILED (719); the
#                 host must print etlRun's ETL_ERROR_LAUNCH_FAILED message
#                 naming cuLaunchKernel and exit 1
# In both, the fake must report no violation of the Driver API's rules and
# the host must exit by itself (no signal, no sanitizer report).
set -u
mode=$1 host=$2 artifact=$3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
case $mode in
  complete) ETL_FAKE_CUDA=kernel=complete ;;
  launch_fails) ETL_FAKE_CUDA=fail=cuLaunchKernel:719 ;;
  *) echo "run_host.sh: unknown mode $mode"; exit 2 ;;
esac
export ETL_FAKE_CUDA
rc=0
"$host" "$artifact" --device cuda >"$out" 2>"$err" || rc=$?
cat "$out" "$err"
fail() { echo "run_host.sh ($mode): $*"; exit 1; }
[ "$rc" -eq 1 ] || fail "expected exit status 1, got $rc"
! grep -q 'fake libcuda: violation' "$err" || fail "the fake saw a violation of the Driver API"
! grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$err" || fail "sanitizer report"
case $mode in
  complete)
    grep -q 'ETL fake CUDA device' "$out" || fail "no binding ran on the fake device"
    grep -q 'FAIL' "$out" || fail "no binding reported FAIL"
    ! grep -qw 'OK' "$out" || fail "a binding reported OK although nothing computed it"
    ;;
  launch_fails)
    grep -q 'etlRun.*ETL_ERROR_LAUNCH_FAILED.*cuLaunchKernel' "$err" ||
      fail "no etlRun error naming cuLaunchKernel"
    ;;
esac
echo "run_host.sh ($mode): ok"

#!/usr/bin/env bash
# scalars.sh ETLRUN ETLC PYTHON WORKDIR
# etlrun's --scalar: every element type's value reaches the kernel (a program
# that broadcasts each scalar into an output, read back with --out and
# compared in numpy, f16/bf16 rounded to nearest even), and each misuse is
# exit status 2 with a message naming the scalar: no value, an unknown name,
# a value that does not parse or does not fit. --params lists the scalars.
# Exits 77 (ctest: skipped) when numpy is missing.
set -euo pipefail
etlrun=$1 etlc=$2 python=$3 dir=$4
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: numpy is not installed for $python (apt-get install python3-numpy)"
  exit 77
fi
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/scal.etl" <<'ETL'
kernel scal<N: dim>(yf: tensor<f32>[N], yh: tensor<f16>[N], yb: tensor<bf16>[N],
                    yi: tensor<i32>[N], yl: tensor<i64>[N],
                    f: f32, h: f16, b: bf16, i: i32, l: i64) where N % 16 == 0 {
  task t[j in 0 .. N / 16] {
    store(yf[j * 16 .. +16], zeros<f32>[16] + f);
    store(yh[j * 16 .. +16], zeros<f16>[16] + h);
    store(yb[j * 16 .. +16], zeros<bf16>[16] + b);
    store(yi[j * 16 .. +16], zeros<i32>[16] + i);
    store(yl[j * 16 .. +16], zeros<i64>[16] + l);
  }
}
ETL
"$etlc" compile "$dir/scal.etl" -o "$dir/scal.etlb" --target sim
art=$dir/scal.etlb
ok=(--scalar f=1.5 --scalar h=0.1 --scalar b=0.1 --scalar i=-7 --scalar l=1099511627777)

# fails CMD... with exit 2 and a message containing $want
expect_usage_error() {
  local want=$1 rc=0
  shift
  "$etlrun" "$art" --device sim --dim N=32 "$@" >"$dir/out.txt" 2>&1 || rc=$?
  if [[ $rc != 2 ]] || ! grep -qF -- "$want" "$dir/out.txt"; then
    echo "FAIL: etlrun $* exited $rc, expected 2 with: $want"; cat "$dir/out.txt"; exit 1
  fi
  echo "ok: $want"
}

"$etlrun" "$art" --params | tee "$dir/params.txt"
grep -qx "h: f16 (scalar)" "$dir/params.txt"
grep -qx "l: i64 (scalar)" "$dir/params.txt"

"$etlrun" "$art" --device sim --dim N=32 "${ok[@]}" --out yf="$dir/yf.npy" --out yh="$dir/yh.npy" \
  --out yb="$dir/yb.npy" --out yi="$dir/yi.npy" --out yl="$dir/yl.npy"
"$python" - "$dir" <<'PY'
import sys, numpy as np
d = sys.argv[1]
ld = lambda n: np.load("%s/%s.npy" % (d, n))
assert (ld("yf") == np.float32(1.5)).all(), ld("yf")
assert (ld("yh") == np.float16(0.1)).all(), ld("yh")
w = int(np.float32(0.1).view(np.uint32))
bf = (w + 0x7FFF + ((w >> 16) & 1)) >> 16          # round to nearest even
assert (ld("yb").view(np.uint16) == bf).all(), ld("yb").view(np.uint16)
assert (ld("yi") == -7).all() and ld("yi").dtype == np.int32
assert (ld("yl") == 2 ** 40 + 1).all() and ld("yl").dtype == np.int64
print("every scalar's value reached the kernel")
PY

expect_usage_error "scalar parameter 'l' (i64) has no value: give --scalar l=VALUE" "${ok[@]:0:8}"
expect_usage_error "no scalar parameter 'eps' (it has: f (f32), h (f16), b (bf16), i (i32), l (i64))" \
  "${ok[@]}" --scalar eps=1
expect_usage_error "'abc' is not a number (scalar 'f' is f32)" "${ok[@]}" --scalar f=abc
expect_usage_error "'1.5' is not an integer (scalar 'i' is i32)" "${ok[@]}" --scalar i=1.5
expect_usage_error "'2147483648' does not fit in i32" "${ok[@]}" --scalar i=2147483648
expect_usage_error "'70000' overflows f16 (largest 65504)" "${ok[@]}" --scalar h=70000
expect_usage_error "'1e39' overflows f32" "${ok[@]}" --scalar f=1e39
expect_usage_error "expected NAME=VALUE" "${ok[@]}" --scalar f

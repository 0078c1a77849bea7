#!/bin/sh
# tma_probe.sh - one TMA ring with ragged edges on a Hopper GPU, bit for bit
# against the sim (issue 29, item 6; docs/ARCHITECTURE.md "TMA rings").
#
#   sh scripts/tma_probe.sh [BUILD_DIR]        (default: build)
#
# Needs an sm_90 device (H100/H200: the sm_90a code runs only there), the
# build's etlc and etlrun, python3 (standard library only). Exits 77 saying
# why when there is no such device. On a lent GPU (the `run` tool), carry the
# build directory: run with command "sh scripts/tma_probe.sh build".
#
# What it does: compiles scripts/kloop_gemv.etl (the naive GEMV: per K step a
# 64 x 128 bf16 weight tile and a 64-element x slice, each a plain ring) for
# sm_90a and sim in one artifact, so both run the TMA rings (the plan is one
# for every target of the list): on the GPU cp.async.bulk.tensor with the
# runtime's cuTensorMapEncodeTiled maps and mbarrier parity waits, on the sim
# its model of them. N = 200 and K = 1000 end in a partial column tile (72 of
# 128) and a partial K step (40 of 64 rows): the boxes cross the tensor's
# edges, where the map's zero fill stands for the rows and columns past it.
# Inputs are small integers, so every sum is exact in f32 in any order (the
# GPU's fused multiply-adds too): the GPU's y must equal the sim's bit for bit
# and the exact reference. Prints PASS, or FAIL with the first mismatches
# (exit 1). Then the same with N = 256, K = 1024 (no ragged edge) and
# N = 8, K = 40 (one partial box in each direction, fewer steps than stages).
set -eu
B=${1:-build}
ETLC=$B/compiler/etlc
ETLRUN=$B/tools/etlrun
for f in "$ETLC" "$ETLRUN"; do
  [ -x "$f" ] || { echo "tma_probe: no $f (build first)"; exit 2; }
done
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "tma_probe: SKIP: no nvidia-smi, no GPU here"; exit 77
fi
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' ')
if [ "$cc" != "9.0" ]; then
  echo "tma_probe: SKIP: the device is compute capability $cc; sm_90a code runs on 9.0 only"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset ETL_TILE_TMA ETL_TILE_RING
"$ETLC" compile scripts/kloop_gemv.etl --target sm_90a,sim -o "$T/g.etlb"
"$ETLC" compile scripts/kloop_gemv.etl --target sm_90a --emit=ptx -o "$T/g.ptx"
grep -q "cp.async.bulk.tensor.2d" "$T/g.ptx" || { echo "FAIL: no TMA in the sm_90a PTX"; exit 1; }
status=0
for nk in "200 1000" "256 1024" "8 40"; do
  set -- $nk
  N=$1 K=$2
  python3 - "$T" "$N" "$K" <<'PY'
import struct, sys
d, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def npy(path, descr, shape, payload):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d," % s for s in shape))
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + payload)
def bf16(v):  # small integers: exact in bf16, the f32's top half
    return struct.pack("<f", float(v))[2:]
x = [(i * 2654435761) % 7 - 3 for i in range(K)]
w = [(i * 40503 + 11) % 9 - 4 for i in range(K * N)]
npy(d + "/x.npy", "|V2", (K,), b"".join(bf16(v) for v in x))
npy(d + "/w.npy", "|V2", (K, N), b"".join(bf16(v) for v in w))
y = [sum(x[k] * w[k * N + n] for k in range(K)) for n in range(N)]
npy(d + "/ref.npy", "<f4", (N,), b"".join(struct.pack("<f", float(v)) for v in y))
PY
  for dev in cuda sim; do
    "$ETLRUN" "$T/g.etlb" --device $dev --dim N=$N --dim K=$K --in x="$T/x.npy" \
      --in w="$T/w.npy" --out y="$T/y_$dev.npy"
  done
  if cmp -s "$T/y_cuda.npy" "$T/y_sim.npy" && cmp -s "$T/y_sim.npy" "$T/ref.npy"; then
    echo "PASS N=$N K=$K: cuda (TMA) == sim == exact, bit for bit"
  else
    status=1
    echo "FAIL N=$N K=$K:"
    python3 - "$T" <<'PY'
import struct, sys
d = sys.argv[1]
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    return struct.unpack("<%df" % ((len(b) - 10 - n) // 4), b[10 + n:])
c, s = (load(d + "/y_%s.npy" % k) for k in ("cuda", "sim"))
r = load(d + "/ref.npy")
bad = [i for i in range(len(r)) if not (c[i] == s[i] == r[i])]
print("  %d of %d differ; first: %s" % (len(bad), len(r),
      ", ".join("y[%d] cuda %g sim %g exact %g" % (i, c[i], s[i], r[i]) for i in bad[:5])))
PY
  fi
done
exit $status

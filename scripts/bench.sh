#!/usr/bin/env bash
# Benchmarks: prints tables, asserts nothing (tests own correctness).
#
#   scripts/bench.sh [BUILD_DIR]        (default: build/, made by scripts/setup.sh)
#
# 1. etlc stage times per example (median of 5 runs of --time-passes), for
#    the artifact with targets sm_90,sim.
# 2. etlRun wall time of each example on the device "auto" picks (the GPU when
#    one is present, else sim), per shape binding, median of 5 runs, from one
#    artifact. On sim this measures the simulator (CPU threads and fibers),
#    not GPU performance; compare numbers only within one run of this script.
# 3. Speed of light on an H100 (SXM) per example at a stated binding, from
#    `etlc --emit=cost` (FLOPs, minimum DRAM bytes, SOL time, the bound), and,
#    when ptxas is installed, the registers, spills and shared memory per CTA
#    of its sm_90 kernel and the CTAs of its .maxntid threads per SM they allow
#    (ptxas does not see the dynamic shared memory the launch adds).
# 3b. gemv_int4 vs its f16 twin in the same program: the minimum DRAM bytes
#    and SOL time of the u4-weight groups (dequantised per group of 128 with
#    f16 scale and zero point) against the f16-weight groups, from
#    `etlc --emit=cost` (packed tensors count half a byte per element).
# 4. The modelled time from the sim profile at a binding the simulator runs
#    in seconds: model = max(unique DRAM bytes / HBM bandwidth, FLOPs_tc /
#    tensor peak + FLOPs_other / FP32 peak, shared wavefronts / (SMs x
#    clock)) on an H100 (its SMs and boost clock from compiler/cost/gpus.def,
#    one shared-memory wavefront per SM per clock; the wavefronts of loads,
#    stores and ldmatrix: an 8-row
#    ldmatrix phase moves 128 bytes, one wavefront): a lower bound given the traffic the code really makes,
#    % of SOL = SOL / model, with the sector efficiency, unique DRAM bytes /
#    minimum bytes (redundant traffic) and lane utilisation behind it.
#    decode_layer (no C host) runs through its PyTorch check script.
# 4c. The latency-aware timing model (scripts/perf_model.py,
#    docs/PERF_MODEL.md) on an H200: every measured H200 row (README
#    "Benchmarks") with the model's prediction, whether the row fitted a
#    constant or is predicted, and the error (against older code), then the
#    whole Qwen3 decode step at 0.6B and 8B dims, batch 1, 4, 16, 64, KV
#    1024: modelled time, tokens/s, % of HBM bandwidth, speed of light. The
#    task graph comes from etlc --emit=taskgraph at the row's binding (no sim
#    run), each task's time from the code (PTX per K step by class, trips,
#    bytes, the cubin's SASS ratio), latencies and issue rates, replayed
#    over the 132 SMs as the runtime deals tasks (layer by layer in a
#    layered block).
# 4d. The task switch against task count (scripts/queue_bench.py): queue
#    operations and dependent round trips per task from the sim profile, for
#    a synthetic dynamic program at several sizes, decode_layer and
#    qwen3_decode at batch 1, 4 and 16, with the model's pop and switch cost.
# 5. Compile time of the layer programs (decode_layer, and moe_layer when
#    present): etlc from .etl to sm_90 PTX against ptxas assembling that PTX,
#    CPU seconds, and their ratio (issue 12 asks etlc <= 0.5 x ptxas).
# 6. moe_layer: speed of light at Qwen3-30B-A3B dims, and fine-grained events
#    against --events=barrier on sim.
# 7. prefill_attention (causal attention, 8 heads x S=4096 x D=128 and GQA,
#    with o_proj): the cost model's SOL (the code's tiles) next to the causal minimum,
#    ptxas registers and spills, and the modelled time from the sim profile
#    at S=256.
# 8. etl_plan_build (the per-shape plan of the first etlRun of a binding):
#    the fast wait counting against the enumeration it replaced, for the
#    synthetic tests/unit/runtime/programs/plan_stars.etl (2-D domains, `*`
#    notify and wait edges, a dynamic group) at 10^4..10^6 tasks and for
#    the layer examples at the dims of the sections above (ms, median of 3;
#    "-": enumeration skipped, it takes minutes there).
# 9. PTX instructions per K-loop step, by class, of a GEMV written naively
#    (scripts/kloop_gemv.etl) and of decode_layer's weight loops
#    (scripts/kloop_stats.py; issue 27 asks <= ~60 SASS per 16 KiB step).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
etlc="$build/compiler/etlc"
[ -x "$etlc" ] || { echo "bench: $etlc not built; run scripts/setup.sh first" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/times" "$tmp/runs"
runs=5
# The compiler's tables, never a copy (scripts/def_facts.py reads
# compiler/target/targets.def and compiler/cost/gpus.def): an H100's (sm_90)
# shared memory per CTA (the opt-in maximum) and registers per SM, for the
# occupancy column; the GPU of every model below and its peaks, the ones
# `etlc --emit=cost --gpu` uses. peaks_py, the start of each Python snippet
# that needs them, sets BW, FP32, TC, TF32 (bytes/s and FLOP/s) and SMEM
# (shared-memory wavefronts per second: one per SM per clock).
facts="$root/scripts/def_facts.py"
sm90_smem=$(python3 "$facts" target sm_90 smem_limit)
sm90_regs=$(python3 "$facts" target sm_90 regs_per_sm)
gpu=h100-sxm
export BENCH_GPU="$gpu" BENCH_SCRIPTS="$root/scripts"
peaks_py='
import os, sys
sys.path.insert(0, os.environ["BENCH_SCRIPTS"])
import def_facts
_gpu = def_facts.gpu(os.environ["BENCH_GPU"])
BW, FP32 = _gpu["hbm_gb_per_s"] * 1e9, _gpu["fp32_tflops"] * 1e12
TC, TF32 = _gpu["tc16_tflops"] * 1e12, _gpu["tf32_tflops"] * 1e12
SMEM = _gpu["sms"] * _gpu["boost_mhz"] * 1e6
'
gpu_sms=$(python3 "$facts" gpu "$gpu" sms)
gpu_ghz=$(python3 -c 'import sys; print(int(sys.argv[1]) / 1000)' "$(python3 "$facts" gpu "$gpu" boost_mhz)")
gpu_peaks=$(python3 -c "$peaks_py"'
print("%g TFLOP/s f16/bf16 tensor, %g TFLOP/s tf32, %g TFLOP/s FP32, %g TB/s" % (TC / 1e12, TF32 / 1e12, FP32 / 1e12, BW / 1e12))')

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== etlc stage times (ms, median of $runs), --target sm_90,sim"
printf '%-16s %8s %8s %10s %10s %10s %10s %9s\n' example parse sema taskgraph backend artifact total bytes
# Every examples/DIR/NAME.etl: NAME is DIR, or a version of DIR's example
# that DIR's host also runs (mlp/mlp_bf16.etl); ex_dir NAME says DIR.
examples=$(cd "$root/examples" && for f in */*.etl; do basename "$f" .etl; done)
ex_dir() {
  local f
  for f in "$root"/examples/*/"$1".etl; do
    if [ -f "$f" ]; then basename "$(dirname "$f")"; fi
  done
  return 0
}
# rowsum_dyn: rowsum with every group `schedule dynamic` (device queue), to
# compare the two schedules side by side on one program.
sed 's/^\(kernel rowsum.*\) {$/\1 schedule dynamic {/' "$root/examples/rowsum/rowsum.etl" \
  >"$tmp/rowsum_dyn.etl"
grep -q 'schedule dynamic' "$tmp/rowsum_dyn.etl" || { echo "bench: could not make rowsum_dyn" >&2; exit 1; }
for ex in $examples rowsum_dyn; do
  src="$root/examples/$(ex_dir "$ex")/$ex.etl"
  [ "$ex" = rowsum_dyn ] && src="$tmp/rowsum_dyn.etl"
  for i in $(seq $runs); do
    if ! "$etlc" compile "$src" -o "$tmp/$ex.etlb" --time-passes 2>"$tmp/times/$i"; then
      echo "$ex: does not compile, skipped:" && head -3 "$tmp/times/$i" && rm -f "$tmp/$ex.etlb"
      continue 2
    fi
  done
  row=()
  for stage in parse sema taskgraph backend artifact total; do
    row+=("$(cat "$tmp"/times/* | awk -v s="$stage" '$1 == s {print $2}' | median)")
  done
  rm -f "$tmp"/times/*
  printf '%-16s %8s %8s %10s %10s %10s %10s %9s\n' "$ex" "${row[@]}" "$(stat -c %s "$tmp/$ex.etlb")"
done

echo
echo "== etlRun wall time (ms, median of $runs), one artifact per example"
printf '%-16s %-14s %10s  %s\n' example shape etlRun device
for spec in "rowsum 256,4096" "rowsum_dyn 256,4096" "rowsum 1024,1024" "rowsum_dyn 1024,1024" \
            "softmax 64,4096" "softmax 512,512" "mlp 64,256,512" "mlp_bf16 64,256,512" \
            "rmsnorm_rope 16,64,4" "decode_attention 8,4,64,16" "moe 256,128,8,2" \
            "moe_bf16 256,128,8,2" "gemv 1024,4096" "gemv_atomic 1024,4096" \
            "gemv_int4 1024,4096" "gemm 256,256,256"; do
  set -- $spec
  ex=$1 shape=$2
  host=$(ex_dir "${ex%_dyn}")
  [ -f "$tmp/$ex.etlb" ] || continue
  for i in $(seq $runs); do
    "$build/examples/${host}_host" "$tmp/$ex.etlb" --shape "$shape" > "$tmp/runs/$i"
  done
  ms=$(grep -h -o 'etlRun [0-9.]* ms' "$tmp"/runs/* | awk '{print $2}' | median)
  dev=$(sed -n 's/.* on \(.*\): max error.*/\1/p' "$tmp/runs/1" | head -1)
  printf '%-16s %-14s %10s  %s\n' "$ex" "$shape" "$ms" "$dev"
  rm -f "$tmp"/runs/*
done

echo
echo "== speed of light on $gpu ($gpu_peaks; etlc --emit=cost; a lower bound, not a measurement)"
printf '%-16s %-34s %12s %12s %11s %-8s %s\n' example binding GFLOP "min MB" "SOL us" bound ptxas
for spec in "rowsum M=4096,N=4096" "softmax B=4096,N=4096" "mlp T=16,D=4096,F=12288" \
            "mlp_bf16 T=16,D=4096,F=12288" "mlp T=4096,D=4096,F=12288" "mlp_bf16 T=4096,D=4096,F=12288" \
            "rmsnorm_rope B=16,D2=2048,P=4096,NP=64,MP=4" "decode_attention B=16,NH=32,NP=1024,MP=64" \
            "moe T=256,H=1024,E=16,K=2" "moe_bf16 T=256,H=1024,E=16,K=2" \
            "gemv N=4096,K=4096" "gemv_atomic N=4096,K=4096" \
            "gemv_int4 N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "prefill_attention S=4096,NKV=8,G=1,HID=1024" \
            "decode_layer B=1,H=4096,NKV=8,G=4,F=12288,NP=64,MP=64,kv_len=1024" \
            "decode_layer B=16,H=4096,NKV=8,G=4,F=12288,NP=1024,MP=64,kv_len=1024" \
            "decode_layer B=128,H=4096,NKV=8,G=4,F=12288,NP=8192,MP=64,kv_len=1024" \
            "qwen3_decode L=28,B=1,H=1024,NKV=8,G=2,F=3072,V=151936,NP=65,MP=65,kv_len=1024" \
            "qwen3_decode L=36,B=1,H=4096,NKV=8,G=4,F=12288,V=151936,NP=65,MP=65,kv_len=1024" \
            "qwen3_decode L=36,B=16,H=4096,NKV=8,G=4,F=12288,V=151936,NP=1040,MP=65,kv_len=1024"; do
  set -- $spec
  ex=$1 bind=$2
  src="$root/examples/$(ex_dir "$ex")/$ex.etl"
  "$etlc" compile "$src" --emit=cost --gpu "$gpu" --bind "$bind" --format=json >"$tmp/cost.json" || continue
  row=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["total"]
fl = t["flops_tc"]["value"] + t["flops_other"]["value"]
by = t["bytes_read"]["value"] + t["bytes_written"]["value"]
print("%.3f %.1f %.2f %s" % (fl / 1e9, by / 1e6, t["sol"]["seconds"] * 1e6, t["sol"]["bound"]))
' "$tmp/cost.json")
  ptx="-"
  if command -v ptxas >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ptxas ]; then
    px=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
    # registers, spill bytes, shared memory per CTA, and the CTAs per SM they
    # allow on an H100 (sm_90's registers and shared memory of targets.def,
    # 2048 threads, 32 CTAs)
    "$etlc" compile "$src" --emit=ptx --target sm_90 >"$tmp/k.ptx" &&
      tpc=$(sed -n 's/.*\.maxntid \([0-9]*\).*/\1/p' "$tmp/k.ptx" | head -1) &&
      ptx=$("$px" -arch=sm_90 -v "$tmp/k.ptx" -o /dev/null 2>&1 |
        awk -v t="${tpc:-128}" -v smem="$sm90_smem" -v regs="$sm90_regs" '
        /spill stores/ { for (i = 1; i <= NF; ++i) if ($i == "spill" && $(i+1) == "stores,") sp += $(i-2) }
        /Used [0-9]+ registers/ { for (i = 1; i <= NF; ++i) { if ($i == "registers,") r = $(i-1); if ($i == "smem") sm = $(i-2) } }
        END { rr = int((r + 7) / 8) * 8; byr = int(regs / (rr * t)); bys = sm > 0 ? int(smem / (sm + 1024)) : 32
              occ = byr; if (bys < occ) occ = bys; if (2048 / t < occ) occ = 2048 / t; if (occ > 32) occ = 32
              printf "%d thr, %d regs, %d B spill, %d B smem, %d CTA/SM", t, r, sp, sm, occ }')
  fi
  set -- $row
  printf '%-16s %-34s %12s %12s %11s %-8s %s\n' "$ex" "$bind" "$1" "$2" "$3" "$4" "$ptx"
done

echo
echo "== gemv_int4: u4 weights (group 128, f16 scale + zero) vs f16 weights, one program (etlc --emit=cost)"
printf '%-22s %12s %12s %10s %10s %8s\n' binding "u4 MB" "f16 MB" "u4 us" "f16 us" "bytes"
for bind in "N=4096,K=4096" "N=14336,K=4096" "N=4096,K=14336"; do
  "$etlc" compile "$root/examples/gemv_int4/gemv_int4.etl" --emit=cost --gpu "$gpu" --bind "$bind" --format=json \
    >"$tmp/cost.json" || continue
  python3 -c '
import json, sys
gs = json.load(open(sys.argv[1]))["groups"]
def side(suffix):
    g = [x for x in gs if x["name"].endswith(suffix)]
    by = sum(x["bytes_read"]["value"] + x["bytes_written"]["value"] for x in g)
    return by, sum(x["sol"]["seconds"] for x in g)
b4, t4 = side("4")
b16, t16 = side("16")
print("%-22s %12.2f %12.2f %10.2f %10.2f %7.2fx" % (sys.argv[2], b4 / 1e6, b16 / 1e6, t4 * 1e6,
      t16 * 1e6, b16 / b4))
' "$tmp/cost.json" "$bind"
done

echo
# The H100 model of the tables below, once: model(profile, FLOPs_tc,
# FLOPs_other) in seconds, and stats(cost JSON, profile JSON) -> the columns.
model_py="$peaks_py"'
import json, sys
def wavefronts(p): # shared loads/stores and ldmatrix (counted apart in the profile)
    return p["shared"]["wavefronts"] + sum(g["sync"].get("ldmatrix_wavefronts", 0) for g in p["groups"])
def model(p, flops_tc, flops_other):
    return max(p["unique_dram_bytes"] / BW, flops_tc / TC + flops_other / FP32,
               wavefronts(p) / SMEM)
def stats(cost_path, prof_path):
    c = json.load(open(cost_path))["total"]; p = json.load(open(prof_path))
    m = model(p, c["flops_tc"]["value"], c["flops_other"]["value"])
    sol = c["sol"]["seconds"]
    g, sh = p["global"], p["shared"]
    # tensor-core share: tensor-core FLOPs the sim counted (mma) / tensor-eligible FLOPs of the cost model
    tcf = sum(gr["sync"].get("tensor_flops", 0) for gr in p["groups"])
    return {"sol": "%.2f" % (sol * 1e6), "model": "%.2f" % (m * 1e6), "pct": "%.1f%%" % (100 * sol / m),
            "eff": "%.1f%%" % (100 * g["efficiency"]),
            "uniq": "%.2f" % (p["unique_dram_bytes"] / (c["bytes_read"]["value"] + c["bytes_written"]["value"])),
            "lanes": "%.1f%%" % (100 * g["lane_utilization"]), "bank": "%.2f" % sh["bank_conflict_factor"],
            "share": "%.1f%%" % (100 * tcf / c["flops_tc"]["value"]) if c["flops_tc"]["value"] else "-"}
'

# model_row EXAMPLE BINDING COST_JSON PROFILE_JSON: one row of the table below.
model_row() {
  python3 -c "$model_py"'
s = stats(sys.argv[1], sys.argv[2])
print(" ".join(s[k] for k in ("sol", "model", "pct", "eff", "uniq", "lanes", "bank", "share")))
' "$3" "$4" | { read -r a b c d e f h t; printf '%-16s %-26s %9s %9s %7s %8s %9s %7s %6s %8s\n' "$1" "$2" "$a" "$b" "$c" "$d" "$e" "$f" "$h" "$t"; }
}

echo "== modelled time from the sim profile on $gpu (model = max(unique DRAM bytes / BW, FLOPs_tc / TC peak + FLOPs_other / FP32 peak, shared + ldmatrix wavefronts / ($gpu_sms SMs x $gpu_ghz GHz)))"
printf '%-16s %-26s %9s %9s %7s %8s %9s %7s %6s %8s\n' example binding "SOL us" "model us" "% SOL" "sect.eff" "uniq/min" lanes bank "TC share"
for spec in "rowsum 1024,2048 M=1024,N=2048" "softmax 256,2048 B=256,N=2048" "mlp 64,256,512 T=64,D=256,F=512" \
            "mlp_bf16 64,256,512 T=64,D=256,F=512" \
            "rmsnorm_rope 16,64,4 B=16,D2=64,P=64,NP=64,MP=4" "decode_attention 8,4,64,16 B=8,NH=4,NP=64,MP=16" \
            "gemv 1024,4096 N=1024,K=4096" "gemv_atomic 1024,4096 N=1024,K=4096" \
            "gemv_int4 1024,4096 N=1024,K=4096" "moe 256,128,8,2 T=256,H=128,E=8,K=2" \
            "moe_bf16 256,128,8,2 T=256,H=128,E=8,K=2" "gemm 256,256,256 M=256,N=256,K=256"; do
  set -- $spec
  ex=$1 shape=$2 bind=$3
  "$build/examples/$(ex_dir "$ex")_host" "$build/examples/$ex.etlb" --device sim --shape "$shape" \
    --profile "$tmp/prof.json" >/dev/null || { echo "$ex: host failed" >&2; continue; }
  "$etlc" compile "$root/examples/$(ex_dir "$ex")/$ex.etl" --emit=cost --gpu "$gpu" --bind "$bind" --format=json \
    >"$tmp/cost.json" || continue
  model_row "$ex" "$bind" "$tmp/cost.json" "$tmp/prof.json"
done
# decode_layer has no C host: its PyTorch check runs it (Qwen3-0.6B dims, one
# request of 208 cached tokens; the script sizes MP = 14 and NP = 17 for that).
if /usr/bin/python3 -c 'import torch' 2>/dev/null &&
  /usr/bin/python3 "$root/examples/decode_layer/decode_layer_check.py" "$build/examples/decode_layer.etlb" \
    --dims 0.6b --case 1:208 --profile "$tmp/prof.json" >/dev/null &&
  "$etlc" compile "$root/examples/decode_layer/decode_layer.etl" --emit=cost --gpu "$gpu" --format=json \
    --bind B=1,H=1024,NKV=8,G=2,F=3072,NP=17,MP=14,kv_len=208 >"$tmp/cost.json"; then
  model_row decode_layer "B=1,H=1024,G=2,kv_len=208" "$tmp/cost.json" "$tmp/prof.json"
else
  echo "decode_layer: skipped (needs python3-torch and build/examples/decode_layer.etlb)"
fi
echo "(moe, moe_bf16: --emit=cost counts every expert at its bound, cdiv(T * K, 16) row tiles, so their SOL"
echo " and TC share are against that bound; the expert GEMMs with the tiles the routing made: next table)"

# 4b. The tensor-core GEMMs: % of SOL (model) of the 4096^3 bf16 gemm and of
#    the MoE expert GEMMs before (moe.etl: f32, FMA) and after (moe_bf16.etl:
#    bf16, mma.sync). Expert rows: the `expert` group of the sim profile at
#    the section-4 binding (the routing of the host's last run there:
#    empty experts, half of them unused), with the FLOPs of the tiles the
#    routing really made (the cost model's per-task FLOPs x the tasks the sim ran; --emit=cost
#    alone counts every expert at its bound), so
#      SOL   = max(the group's minimum bytes / BW, its FLOPs at the peaks),
#      model = max(its global sectors x 32 B / BW (its L2 traffic: an upper
#              bound on its DRAM bytes), the same FLOPs, its shared
#              wavefronts / (SMs x clock));
#    "% TC SOL" divides the bf16 group's SOL by the model (the bound the
#    tensor cores set, for both). gemm 4096^3: the model extrapolated from
#    sim profiles at 256 x 256 x 256 and 256 x 256 x 512 (every task runs the
#    same code per K step, then its write-back once: a task's shared
#    wavefronts and tensor FLOPs are a + b K, a and b from the two profiles,
#    times the 256 x more tasks of 4096^2; the tile sizes divide 256), with
#    DRAM at the minimum (A and B read once: L2 holds the reuse). "smem us":
#    the model's shared-memory term (loads, stores and ldmatrix wavefronts).
echo
echo "== tensor-core GEMMs: % of SOL (model) on $gpu, as above"
printf '%-28s %-24s %8s %9s %9s %7s %9s %8s %6s %9s\n' GEMM binding tasks "SOL us" "model us" "% SOL" "% TC SOL" "TC share" bank "smem us"
gemm_py="$peaks_py"'
import json, sys
def group(doc, name):
    return next(g for g in doc["groups"] if g["name"] == name)
def at4096(p, p2, f): # f(profile) at K = 256 and 512 -> 4096^3: (a + b 4096) x 256 tasks
    return (f(p) + (f(p2) - f(p)) * (4096 - 256) / 256) * 256
'
if "$build/examples/gemm_host" "$build/examples/gemm.etlb" --device sim --shape 256,256,256 \
     --profile "$tmp/prof.json" >/dev/null &&
  "$build/examples/gemm_host" "$build/examples/gemm.etlb" --device sim --shape 256,256,512 \
    --profile "$tmp/prof2.json" >/dev/null &&
  "$etlc" compile "$root/examples/gemm/gemm.etl" --emit=cost --gpu "$gpu" --bind M=4096,N=4096,K=4096 --format=json \
    >"$tmp/cost.json"; then
  python3 -c "$gemm_py"'
p = json.load(open(sys.argv[1])); p2 = json.load(open(sys.argv[3])); c = json.load(open(sys.argv[2]))["total"]
at = lambda f: at4096(p, p2, f)
tc, other = c["flops_tc"]["value"], c["flops_other"]["value"]
by = c["bytes_read"]["value"] + c["bytes_written"]["value"]
sol = c["sol"]["seconds"]
smem = at(lambda q: q["shared"]["wavefronts"] + sum(g["sync"]["ldmatrix_wavefronts"] for g in q["groups"])) / SMEM
model = max(by / BW, tc / TC + other / FP32, smem)
tcf = at(lambda q: sum(g["sync"].get("tensor_flops", 0) for g in q["groups"]))
g = group(p, "tile")["sync"]
print("%-28s %-24s %8d %9.2f %9.2f %6.1f%% %9s %7.1f%% %6.2f %9.2f" % ("gemm (bf16, scaled)", "M=N=K=4096",
      c["tasks"]["value"], sol * 1e6, model * 1e6, 100 * sol / model, "-", 100 * tcf / tc,
      g["ldmatrix_wavefronts"] / max(1, g["ldmatrix_phases"]), smem * 1e6))
print("%-28s %-24s %8s %9.2f %9s %7s  (2 M N K at the tensor peak alone; acc += dot adds in the mma: no FP32 term)" %
      ("", "", "", 2 * 4096 ** 3 / TC * 1e6, "", ""))
' "$tmp/prof.json" "$tmp/cost.json" "$tmp/prof2.json"
fi
# gemm_tf32 (f32 operands, precision = tf32, 128 x 64 x 16 tiles)
# extrapolated the same way, against the dense tf32 peak (TF32, gpus.def):
# the cost model counts a tf32 dot as FP32 FLOPs, so SOL here is max(A, B
# read once and C written / BW, 2 M N K at the tf32 peak), the model max(the
# cost model's bytes / BW, the sim's tensor FLOPs at the tf32 peak, the
# shared wavefronts). Before its K loop took the cp.async ring (each dot
# staged from registers, waited for, written back and added per K step)
# this row read 2375.10 us of model, 11.7 % of SOL, 250 registers
# (sm_90 ptxas). A's fragments by ldmatrix.x4 instead of four 32-bit loads
# left it at 39.1 %: a conflict-free 32-bit warp load and an ldmatrix phase
# are one 128-byte wavefront each (shared requests -31 %, wavefronts equal).
if "$build/examples/gemm_host" "$build/examples/gemm_tf32.etlb" --device sim --shape 256,256,256 \
     --profile "$tmp/prof.json" >/dev/null &&
  "$build/examples/gemm_host" "$build/examples/gemm_tf32.etlb" --device sim --shape 256,256,512 \
    --profile "$tmp/prof2.json" >/dev/null &&
  "$etlc" compile "$root/examples/gemm/gemm_tf32.etl" --emit=cost --gpu "$gpu" --bind M=4096,N=4096,K=4096 --format=json \
    >"$tmp/cost.json"; then
  python3 -c "$gemm_py"'
p = json.load(open(sys.argv[1])); p2 = json.load(open(sys.argv[3])); c = json.load(open(sys.argv[2]))["total"]
at = lambda f: at4096(p, p2, f)
by = c["bytes_read"]["value"] + c["bytes_written"]["value"]
flops = 2 * 4096 ** 3
sol = max(3 * 4 * 4096 ** 2 / BW, flops / TF32)
tcf = at(lambda q: sum(g["sync"].get("tensor_flops", 0) for g in q["groups"]))
smem = at(lambda q: q["shared"]["wavefronts"] + sum(g["sync"]["ldmatrix_wavefronts"] for g in q["groups"])) / SMEM
model = max(by / BW, tcf / TF32, smem)
print("%-28s %-24s %8d %9.2f %9.2f %6.1f%% %9s %7.1f%% %6.2f %9.2f" % ("gemm_tf32 (f32, scaled)", "M=N=K=4096",
      c["tasks"]["value"], sol * 1e6, model * 1e6, 100 * sol / model, "-", 100 * tcf / flops,
      p["shared"]["bank_conflict_factor"], smem * 1e6))
' "$tmp/prof.json" "$tmp/cost.json" "$tmp/prof2.json"
fi
bind=T=256,H=128,E=8,K=2
for ex in moe_bf16 moe; do # bf16 first: its SOL is the "% TC SOL" reference
  "$build/examples/moe_host" "$build/examples/$ex.etlb" --device sim --shape 256,128,8,2 \
    --profile "$tmp/prof_$ex.json" >/dev/null || { echo "$ex: host failed" >&2; continue; }
  "$etlc" compile "$root/examples/moe/$ex.etl" --emit=cost --gpu "$gpu" --bind "$bind" --format=json \
    >"$tmp/cost_$ex.json" || continue
  python3 -c "$gemm_py"'
ex, bind = sys.argv[3], sys.argv[4]
def terms(prof, cost):
    pg = group(json.load(open(prof)), "expert"); cg = group(json.load(open(cost)), "expert")
    ran = pg["sync"]["tasks"]; per = ran / cg["tasks"]["value"]
    tc, other = cg["flops_tc"]["value"] * per, cg["flops_other"]["value"] * per
    flops_s = tc / TC + other / FP32
    sol = max((cg["bytes_read"]["value"] + cg["bytes_written"]["value"]) / BW, flops_s)
    smem = (pg["shared"]["wavefronts"] + pg["sync"]["ldmatrix_wavefronts"]) / SMEM
    model = max(pg["global"]["sectors"] * 32 / BW, flops_s, smem)
    return ran, tc, sol, model, pg["sync"], smem
ran, tc, sol, model, sync, smem = terms(sys.argv[1], sys.argv[2])
tc_sol = terms(sys.argv[5], sys.argv[6])[2]
name = "moe expert (%s)" % ("bf16, mma.sync" if ex == "moe_bf16" else "f32, FMA")
share = "%.1f%%" % (100 * sync["tensor_flops"] / tc) if tc else "-"
bank = "%.2f" % (sync["ldmatrix_wavefronts"] / sync["ldmatrix_phases"]) if sync["ldmatrix_phases"] else "-"
print("%-28s %-24s %8d %9.2f %9.2f %6.1f%% %8.1f%% %8s %6s %9.2f" % (name, bind, ran, sol * 1e6, model * 1e6,
      100 * sol / model, 100 * tc_sol / model, share, bank, smem * 1e6))
' "$tmp/prof_$ex.json" "$tmp/cost_$ex.json" "$ex" "$bind" "$tmp/prof_moe_bf16.json" "$tmp/cost_moe_bf16.json"
done

echo
echo "== latency-aware timing model on h200 (scripts/perf_model.py; every input read from this build's code;"
echo "   fit: the row set a constant, pred: predicted; H200 ms measured on older code, 30c4d87: docs/PERF_MODEL.md 5)"
echo "   then the whole Qwen3 decode step (examples/qwen3_decode), KV 1024: model, not measured;"
echo "   tok/s = B / time, % HBM = the step's bytes (--emit=cost) / time / 4.8 TB/s, SOL = --emit=cost's"
python3 "$root/scripts/perf_model.py" rows --gpu h200 --etlc "$etlc" || echo "(perf_model failed)"

echo
echo "== task switch against task count (sim profile counts, 4 sim workers; model: h200's atomic and L2 latencies)"
/usr/bin/python3 "$root/scripts/queue_bench.py" --build "$build" || echo "(queue_bench failed)"

echo
echo "== compile time: etlc (.etl -> PTX) vs ptxas (that PTX -> SASS), sm_90, CPU seconds (user + sys), median of 3"
printf '%-16s %9s %9s %7s\n' example etlc ptxas ratio
px=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$px" ]; then
  TIMEFORMAT='%U %S'
  for ex in decode_layer moe_layer; do
    src="$root/examples/$ex/$ex.etl"
    [ -f "$src" ] || continue
    for i in 1 2 3; do
      { time "$etlc" compile "$src" --emit=ptx --target sm_90 -o "$tmp/k.ptx" 2>/dev/null; } 2>&1 |
        awk '{print $1 + $2}' >>"$tmp/etlc.t"
      { time "$px" -arch=sm_90 "$tmp/k.ptx" -o /dev/null 2>/dev/null; } 2>&1 |
        awk '{print $1 + $2}' >>"$tmp/ptxas.t"
    done
    e=$(median <"$tmp/etlc.t") p=$(median <"$tmp/ptxas.t")
    rm -f "$tmp/etlc.t" "$tmp/ptxas.t"
    printf '%-16s %9s %9s %7s\n' "$ex" "$e" "$p" "$(awk -v e="$e" -v p="$p" 'BEGIN {printf "%.2f", e / p}')"
  done
  unset TIMEFORMAT
else
  echo "(ptxas not found: skipped)"
fi

echo
echo "== moe_layer (Qwen3-30B-A3B MoE block: E=128, K=8), speed of light on $gpu"
# cost SOL: etlc --emit=cost, where the data-dependent expert ranges count at
# their bound (every expert gets cdiv(T, 16) full row tiles), an upper bound
# on the work. routed SOL: what a uniform routing needs: the weights of the
# E*(1-(1-K/E)^T) experts expected to be used, x, router and output, and
# 2*T*(H*E + 3*K*H*F) FLOPs at the tensor-core peak and HBM bandwidth (TC, BW).
printf '%-6s %-28s %12s %-8s %14s\n' tokens binding "cost SOL us" bound "routed SOL us"
for T in 1 128 1024; do
  bind="T=$T,H=2048,E=128,F=768,K=8"
  "$etlc" compile "$root/examples/moe_layer/moe_layer.etl" --emit=cost --gpu "$gpu" --bind "$bind" --format=json \
    >"$tmp/cost.json" || continue
  python3 -c "$peaks_py"'
import json, sys
T, H, E, F, K = (int(v) for v in sys.argv[2:7])
s = json.load(open(sys.argv[1]))["total"]["sol"]
used = E * (1 - (1 - K / E) ** T)
by = 2 * (used * 3 * H * F + T * H * 2 + H * E)
fl = 2 * T * (H * E + 3 * K * H * F)
print("%-6d %-28s %12.2f %-8s %14.2f" % (T, sys.argv[7], s["seconds"] * 1e6, s["bound"],
      max(by / BW, fl / TC) * 1e6))
' "$tmp/cost.json" "$T" 2048 128 768 8 "$bind"
done

echo
echo "== moe_layer fine-grained events vs --events=barrier on sim (reduced dims H=128, F=64, E=128, K=8:"
echo "   full dims at 128+ tokens take minutes on the simulator); etlRun and wait_ns are host times of"
echo "   the simulator (compare within one run); model % SOL as in the table above, against the routed SOL"
printf '%-6s %-8s %10s %12s %9s %9s %7s\n' tokens events "etlRun ms" "wait ms" "SOL us" "model us" "% SOL"
if [ -x "$build/examples/moe_layer_host" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for T in 1 128 1024; do
    ref="$tmp/moe_ref_$T"
    PYTHONPATH="$root/tests/models" /usr/bin/python3 "$root/tests/models/moe_layer_ref.py" "$ref" \
      "$T" 128 128 64 8 >/dev/null || continue
    for ev in fine barrier; do
      "$build/examples/moe_layer_host" "$build/examples/moe_layer_$ev.etlb" "$ref" --device sim \
        --profile "$tmp/prof.json" >"$tmp/run.txt" || { echo "moe_layer $ev T=$T failed" >&2; continue; }
      ms=$(sed -n 's/.*etlRun \([0-9.]*\) ms.*/\1/p' "$tmp/run.txt" | head -1)
      python3 -c "$model_py"'
T, H, E, F, K = (int(v) for v in sys.argv[2:7])
p = json.load(open(sys.argv[1]))
used = E * (1 - (1 - K / E) ** T)
by = 2 * (used * 3 * H * F + T * H * 2 + H * E)
fl = 2 * T * (H * E + 3 * K * H * F)
sol = max(by / BW, fl / TC)
model = model(p, fl, 0) # the router and expert GEMMs run on mma.sync (tensor cores)
wait = sum(g["sync"]["wait_ns"] for g in p["groups"]) / 1e6
print("%-6d %-8s %10s %12.1f %9.2f %9.2f %6.1f%%" % (T, sys.argv[7], sys.argv[8], wait, sol * 1e6,
      model * 1e6, 100 * sol / model))
' "$tmp/prof.json" "$T" 128 128 64 8 "$ev" "$ms"
    done
  done
else
  echo "(skipped: moe_layer_host not built or python3-torch missing)"
fi

echo
echo "== prefill_attention (causal attention, D=128, and o_proj to HID = heads x D; bf16), speed of light on $gpu"
# cost SOL: etlc --emit=cost, the work the code's tiles do (a diagonal tile's
# masked half and the rows past S included; the loop up to the causal limit
# is summed over the query tiles: sum[attn](...) in its expressions).
# causal SOL: the minimum work, 4 H D S (S + 1) / 2 tensor FLOPs (QK^T and
# PV over the causal triangle) plus o_proj's 2 S H D HID, with q, k, v, out,
# wo and y moved once, at the tensor-core peak and HBM bandwidth (TC, BW).
# ptxas: registers and spills of the sm_90 kernel.
pa_py="$peaks_py"'
import json, sys
def costs(path):
    t = json.load(open(path))["total"]
    return tuple(t[k]["value"] for k in ("flops_tc", "flops_other", "bytes_read", "bytes_written"))
def causal(env):
    S, NKV, G, D, HID = env["S"], env["NKV"], env["G"], 128, env["HID"]
    H = NKV * G
    return (4 * H * D * S * (S + 1) / 2 + 2 * S * H * D * HID,
            2 * (S * D * (2 * H + 2 * NKV) + H * D * HID + S * HID))
'
printf '%-30s %10s %10s %12s %12s %12s  %s\n' binding "cost GFLOP" "min GFLOP" "cost SOL us" "causal SOL us" bound ptxas
pa_src="$root/examples/prefill_attention/prefill_attention.etl"
pa_ptx="-"
if [ -x "$px" ] && "$etlc" compile "$pa_src" --emit=ptx --target sm_90 >"$tmp/pa.ptx" 2>/dev/null; then
  pa_ptx=$("$px" -arch=sm_90 -v "$tmp/pa.ptx" -o /dev/null 2>&1 | awk '
    /spill stores/ { for (i = 1; i <= NF; ++i) if ($i == "spill" && $(i+1) == "stores,") sp += $(i-2) }
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; ++i) if ($i == "registers,") r = $(i-1) }
    END { printf "%d regs, %d B spill", r, sp }')
fi
for bind in "S=4096,NKV=8,G=1,HID=1024" "S=4096,NKV=8,G=4,HID=4096" "S=16384,NKV=8,G=4,HID=4096"; do
  "$etlc" compile "$pa_src" --emit=cost --gpu "$gpu" --bind "$bind" --format=json >"$tmp/cost.json" || continue
  python3 -c "$pa_py"'
env = dict((k, int(v)) for k, v in (kv.split("=") for kv in sys.argv[2].split(",")))
tc, other, rd, wr = costs(sys.argv[1])
cost_s = max((rd + wr) / BW, tc / TC + other / FP32)
fl, by = causal(env)
mem, comp = by / BW, fl / TC
print("%-30s %10.1f %10.1f %12.2f %12.2f %12s  %s" % (sys.argv[2], (tc + other) / 1e9, fl / 1e9, cost_s * 1e6,
      max(mem, comp) * 1e6, "memory" if mem >= comp else "compute", sys.argv[3]))
' "$tmp/cost.json" "$bind" "$pa_ptx"
done
echo "-- modelled time from the sim profile (as in the model table above; FLOPs the code runs, % of the causal SOL)"
printf '%-30s %12s %9s %7s %8s %6s %8s\n' binding "causal SOL us" "model us" "% SOL" "sect.eff" bank "TC share"
if [ -x "$build/examples/prefill_attention_host" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for dims in "256,2,2,128,512"; do
    ref="$tmp/pa_ref"
    PYTHONPATH="$root/tests/models" /usr/bin/python3 "$root/tests/models/prefill_attention_ref.py" "$ref" \
      $(echo "$dims" | tr ',' ' ') >/dev/null || continue
    "$build/examples/prefill_attention_host" "$build/examples/prefill_attention.etlb" "$ref" --device sim \
      --profile "$tmp/prof.json" >/dev/null || { echo "prefill_attention $dims failed" >&2; continue; }
    bind=$(echo "$dims" | awk -F, '{printf "S=%s,NKV=%s,G=%s,HID=%s", $1, $2, $3, $5}')
    "$etlc" compile "$pa_src" --emit=cost --gpu "$gpu" --bind "$bind" --format=json >"$tmp/cost.json" || continue
    python3 -c "$model_py$pa_py"'
env = dict((k, int(v)) for k, v in (kv.split("=") for kv in sys.argv[3].split(",")))
tc, other, rd, wr = costs(sys.argv[1])
p = json.load(open(sys.argv[2]))
m = model(p, tc, other)
fl, by = causal(env)
sol = max(by / BW, fl / TC)
tcf = sum(g["sync"].get("tensor_flops", 0) for g in p["groups"])
print("%-30s %12.2f %9.2f %6.1f%% %7.1f%% %6.2f %7.1f%%" % (sys.argv[3], sol * 1e6, m * 1e6, 100 * sol / m,
      100 * p["global"]["efficiency"], p["shared"]["bank_conflict_factor"], 100 * tcf / tc))
' "$tmp/cost.json" "$tmp/prof.json" "$bind"
  done
else
  echo "(skipped: prefill_attention_host not built or python3-torch missing)"
fi

echo
echo "== etl_plan_build: fast wait counting vs the enumeration (ms, median of 3; runtime/bench/plan_bench.c)"
pbench="$build/runtime/etl_plan_bench"
if [ -x "$pbench" ]; then
  printf '%-18s %-28s %10s %10s %14s %10s %9s %5s\n' program binding tasks counters enumerate fast speedup same
  "$etlc" compile "$root/tests/unit/runtime/programs/plan_stars.etl" -o "$tmp/plan_stars.etlb" --target sim
  for spec in "both 100 100" "both 300 300" "both 1000 100" "fast 1000 1000"; do
    read -r pmode pm pn <<<"$spec"
    "$pbench" "$pmode" "$tmp/plan_stars.etlb" 132 "$pm" "$pn" || echo "plan_stars $spec: failed"
  done
  "$etlc" compile "$root/examples/moe_layer/moe_layer.etl" -o "$tmp/moe_layer_plan.etlb" --target sim 2>"$tmp/plan_err" &&
    "$pbench" both "$tmp/moe_layer_plan.etlb" 132 256 2048 128 768 8 || { echo "moe_layer: failed"; head -3 "$tmp/plan_err"; }
  "$etlc" compile "$root/examples/prefill_attention/prefill_attention.etl" -o "$tmp/pa_plan.etlb" --target sim 2>"$tmp/plan_err" &&
    "$pbench" both "$tmp/pa_plan.etlb" 132 4096 8 1 1024 || { echo "prefill_attention: failed"; head -3 "$tmp/plan_err"; }
else
  echo "(skipped: $pbench not built)"
fi

echo
echo "== PTX instructions per K-loop step (sm_90; scripts/kloop_stats.py: one interior step, around the"
echo "   element-wise fallback, inner copy loops times their trips; static = every block once)"
python3 "$root/scripts/kloop_stats.py" --etlc "$etlc" "$root/scripts/kloop_gemv.etl" \
  "$root/examples/decode_layer/decode_layer.etl" --groups col,qproj,gate_up,down_part ||
  echo "(kloop_stats failed)"

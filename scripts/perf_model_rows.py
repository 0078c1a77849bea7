"""perf_model_rows.py: the inputs of scripts/perf_model.py, and the measured rows.

BODIES[program][group]: one task body, per warp and per K-loop step:
  threads     CTA threads (the PTX's .maxntid; every group of a kernel has them)
  steps       K-loop steps per task (an expression of the dims and the task's
              domain variables, as --emit=taskgraph writes them)
  ptx_step    PTX per warp per step by class (scripts/kloop_stats.py, branch
              lean: args gmem bar mma i64 pred smem other) and `edge`, the
              part in the element-wise edge path an interior step skips
  mma_step    mma.sync per warp per step (the dot's FLOPs / 4096 / warps;
              m16n8k8 tf32: flops_per_mma 2048, tc "tf32")
  bytes_step  global bytes the task streams per step
  ring        cp.async stages (3: the loads of the next two steps in flight,
              cp.async.wait_group 1 in the PTX); 1: loaded and waited for in
              the step; 0: nothing streams per step
  dep_step    dependent L2 round trips per step outside the ring (decode's
              x and ln1 loads that feed the normed operand)
  sass_fixed  SASS per warp of prologue + epilogue (estimate)
  trips_task  dependent round trips per task besides fetch/wait/notify
              (control block, page table, argument loads before the first use)
  out_bytes   bytes the task writes once

The PTX counts were read with kloop_stats.py (branch lean, 2026-11-29) from
the PTX of this tree's etlc (main at 3f62c00). The H200 rows were measured
on older code, 30c4d87 (stop 25), before the AST lowering's removal and the
ticket queue (rows model its queue: "cas"); its kernels were larger (static
SASS of the sm_90 cubin, 30c4d87 -> 3f62c00: gemm 3680 -> 2200, gemm_tf32
1920 -> 1480, mlp_bf16 3832 -> 3624, prefill_attention 7192 -> 6392,
decode_layer 15200 -> 14832), so each row's error mixes the model's error
with what changed in the code (docs/PERF_MODEL.md, section 6). Rows say
whether they were fitted (their measurement set a constant of FIT) or
predicted.
"""


def K(args, gmem, bar, mma, i64, pred, smem, other, edge=0, scale=1.0):
    """A ptx_step: the class counts of one K step (divided by `scale` when a
    kloop row covers `scale` steps)."""
    d = dict(args=args, gmem=gmem, bar=bar, mma=mma, i64=i64, pred=pred, smem=smem, other=other,
             edge=edge)
    return {k: v / scale for k, v in d.items()}


# SASS per expanded PTX instruction (perf_model.EXPAND) of each program's
# sm_90 kernel, read from its cubin: `perf_model.py sass` (ptxas, readelf,
# kloop_stats.py) divides the static SASS count (.text bytes / 16) by the
# expanded static PTX count. What ptxas shares and hoists; measured, not
# fitted. Check: decode's qproj step (TK 64) expands to 441, times 0.94 is
# 415 SASS per warp, where stop 25 counted ~400 in the cubin.
SASS_RATIO = {"gemm": 0.91, "gemm_tf32": 0.85, "mlp_bf16": 0.83, "prefill_attention": 0.92,
              "decode_tk64": 0.94, "decode_tk32": 0.94, "decode_tk16": 0.95}

# Fitted constants, each from the one measurement named (every other row is
# predicted with them):
#  launch_s:   gemm bf16 128^3 (one task, 0.029 ms measured; the task itself
#              ~6 us in the model): host launch, argument and counter uploads.
#  cas_pop_s:  the dynamic queue's serial cost per pop (read head, read tail,
#              CAS head: one CTA in the chip wins at a time), set so that the
#              Qwen3-8B decode layer at B 16 (TK 64, 3.69 ms) comes out; issue
#              27 read 0.74 us from B 16 minus B 1 over ~3,960 more pops.
FIT = {"launch_s": 23e-6, "cas_pop_s": 0.76e-6}

_GEMM = {"threads": 256, "steps": "cdiv(K, 32)", "ptx_step": K(8, 19, 2, 44, 136, 28, 4, 114, 88),
         "mma_step": 32, "bytes_step": (128 * 32 + 32 * 128) * 2, "ring": 3, "sass_fixed": 400,
         "trips_task": 2, "out_bytes": 128 * 128 * 4}
_TF32 = {"threads": 256, "steps": "cdiv(K, 16)", "ptx_step": K(7, 11, 2, 20, 126, 21, 18, 116, 0),
         "mma_step": 16, "flops_per_mma": 2048, "tc": "tf32",
         "bytes_step": (128 * 16 + 16 * 64) * 4, "ring": 3, "sass_fixed": 300, "trips_task": 2,
         "out_bytes": 128 * 64 * 4}
_MLP = {"threads": 256, "ptx_step": K(6, 19, 2, 8, 110, 26, 4, 99, 96), "mma_step": 4,
        "bytes_step": (32 * 32 + 32 * 64) * 2, "ring": 3, "sass_fixed": 300, "trips_task": 2}


def _decode(tk):
    """decode_layer's bodies at TK = tk (16, 32, 64), 256 threads."""
    s = 64 // tk  # steps per 64 columns of K
    ptx = {
        64: dict(qproj=K(12, 27, 6, 27, 188, 28, 8, 219, 192), kproj=K(10, 27, 6, 27, 165, 26, 8, 219, 174),
                 vproj=K(13, 35, 6, 19, 200, 29, 9, 255, 220), gate_up=K(10, 28, 8, 27, 130, 42, 8, 208, 122),
                 down_part=K(12, 37, 2, 16, 217, 51, 8, 207, 192),
                 o_part=K(32, 76, 5, 32, 601, 83, 16, 421, 694, scale=2)),
        32: dict(qproj=K(10, 25, 4, 13, 166, 21, 6, 166, 179), kproj=K(8, 25, 4, 13, 175, 19, 6, 163, 179),
                 vproj=K(7, 15, 4, 9, 87, 16, 3, 123, 82), gate_up=K(8, 26, 6, 13, 99, 36, 6, 164, 111),
                 down_part=K(6, 19, 2, 8, 120, 27, 4, 108, 96),
                 o_part=K(48, 114, 9, 32, 991, 115, 24, 653, 1009, scale=4)),
        16: dict(qproj=K(10, 23, 4, 7, 161, 18, 6, 139, 180), kproj=K(8, 23, 4, 7, 164, 16, 6, 137, 180),
                 vproj=K(6, 13, 4, 5, 74, 12, 3, 88, 84), gate_up=K(8, 24, 6, 7, 92, 33, 6, 138, 113),
                 down_part=K(6, 19, 2, 4, 103, 27, 4, 98, 103),
                 o_part=K(80, 190, 17, 32, 1548, 187, 40, 1021, 1608, scale=8)),
    }[tk]
    mma = 16 * tk * 128 * 2 // 4096 // 8  # a [16, tk] x [tk, 128] dot per step, 8 warps
    w = tk * 128 * 2                      # a [tk, 128] bf16 weight tile per step
    proj = {"threads": 256, "steps": "H / %d" % tk, "mma_step": mma, "bytes_step": w, "ring": 3,
            "dep_step": 2, "sass_fixed": 600, "trips_task": 4, "out_bytes": 16 * 128 * 2}
    return {
        "qproj": dict(proj, ptx_step=ptx["qproj"]),
        "kproj": dict(proj, ptx_step=ptx["kproj"]),
        "vproj": dict(proj, ptx_step=ptx["vproj"]),
        # one chunk of 32 cached tokens: its K and V rows (page table, then
        # the rows: dependent trips before the loop), then per query head of
        # the group its q row (an L2 trip), a dot, a softmax and a weighted
        # sum (FMA and shuffles; kloop_stats finds no K loop there: the
        # per-head count is an estimate)
        "chunk": {"threads": 256, "steps": "G", "ptx_step": K(2, 4, 2, 16, 20, 10, 4, 100),
                  "bytes_step": 0, "ring": 0, "dep_step": 1, "sass_fixed": 300, "trips_task": 3,
                  "out_bytes": "G * (128 + 2) * 4"},
        "merge": {"threads": 256, "steps": "G * min(cdiv(kv_len[b], 32), cdiv(MP * 16, 32))",
                  "ptx_step": K(3, 3, 0, 2, 9, 2, 0, 26), "bytes_step": 130 * 4, "ring": 2,
                  "sass_fixed": 200, "trips_task": 1, "out_bytes": "G * 128 * 2"},
        "o_part": dict(proj, steps="G * %d" % (128 // tk), ptx_step=ptx["o_part"], dep_step=0,
                       out_bytes=16 * 128 * 4),
        "o_sum": {"threads": 256, "steps": "NKV", "ptx_step": K(4, 8, 2, 0, 25, 15, 4, 33),
                  "bytes_step": 16 * 128 * 4, "ring": 2, "sass_fixed": 200, "trips_task": 1,
                  "out_bytes": 16 * 128 * 2},
        "gate_up": dict(proj, ptx_step=ptx["gate_up"], mma_step=2 * 16 * tk * 64 * 2 // 4096 // 8,
                        bytes_step=2 * tk * 64 * 2, out_bytes=16 * 64 * 2),
        "down_part": dict(proj, steps="1024 / %d" % tk, ptx_step=ptx["down_part"], dep_step=0,
                          out_bytes=16 * 128 * 4),
        "down_sum": {"threads": 256, "steps": "F / 1024", "ptx_step": K(4, 8, 2, 0, 26, 15, 4, 33),
                     "bytes_step": 16 * 128 * 4, "ring": 2, "sass_fixed": 200, "trips_task": 1,
                     "out_bytes": 16 * 128 * 2},
    }


BODIES = {
    "gemm": {"tile": _GEMM},
    "gemm_tf32": {"tile": _TF32},
    "mlp_bf16": {"gate_up": dict(_MLP, steps="2 * cdiv(D, 32)", out_bytes=32 * 64 * 2),
                 "down": dict(_MLP, steps="cdiv(F, 32)", out_bytes=32 * 64 * 4)},
    # attn: per KV step of 16 keys, QK^T and PV of a 128-row query tile (1 MFLOP,
    # 256 mma, 32 a warp) and K, V tiles [16, 128] bf16; steps up to the causal
    # limit of query tile i. o_proj: per head a [128, 128] x [128, 64] dot,
    # reading that head's out tile (32 KiB) and wo slice (16 KiB).
    "prefill_attention": {
        "attn": {"threads": 256, "steps": "min(cdiv((i + 1) * 128, 16), cdiv(S, 16))",
                 "ptx_step": K(6, 19, 2, 50, 149, 42, 4, 301, 129), "mma_step": 32,
                 "bytes_step": 2 * 16 * 128 * 2, "ring": 2, "sass_fixed": 800, "trips_task": 2,
                 "out_bytes": 128 * 128 * 2},
        "o_proj": {"threads": 256, "steps": "NKV * G", "ptx_step": K(42, 91, 2, 96, 673, 76, 20, 506, 699),
                   "mma_step": 64, "bytes_step": 128 * 128 * 2 + 128 * 64 * 2, "ring": 2,
                   "sass_fixed": 400, "trips_task": 2, "out_bytes": 128 * 64 * 2},
    },
    "decode_tk64": _decode(64),
    "decode_tk32": _decode(32),
    "decode_tk16": _decode(16),
}

_8B = {"H": 4096, "NKV": 8, "G": 4, "F": 12288, "NP": 1024}
_06B = {"H": 1024, "NKV": 8, "G": 2, "F": 3072, "NP": 1024}


def cdiv(a, b):
    return -(-a // b)


# The programs gpu_bench.py runs: their source and bodies (perf_model.model_ms)
PROGRAMS = {"gemm": ("examples/gemm/gemm.etl", "gemm"),
            "gemm_tf32": ("examples/gemm/gemm_tf32.etl", "gemm_tf32"),
            "mlp_bf16": ("examples/mlp/mlp_bf16.etl", "mlp_bf16"),
            "prefill_attention": ("examples/prefill_attention/prefill_attention.etl",
                                  "prefill_attention"),
            "decode_layer": ("examples/decode_layer/decode_layer.etl", "decode_tk64")}


def _dec(dims, b, kv, tk, ms, role):
    # MP as decode_layer_check.make_case sizes it (pages per request, + 1)
    return {"src": "examples/decode_layer/decode_layer.etl", "bodies": "decode_tk%d" % tk,
            "binding": dict(dims, B=b, kv_len=kv, MP=cdiv(kv, 16) + 1, _tensors=("kv_len",)),
            "defines": () if tk == 64 else ("TK=%d" % tk,), "measured_ms": ms, "role": role,
            "what": "decode layer %s, B %d, KV %d, TK %d" % ("8B" if dims is _8B else "0.6B", b, kv, tk)}


# The measured H200 rows (README "Benchmarks"; stop 25's note: its final
# table and its TK sweep, measured side by side in one call), CUDA events,
# median of 15 runs, launch included.
ROWS = {
    "gemm_bf16_128": {"src": "examples/gemm/gemm.etl", "bodies": "gemm", "what": "gemm bf16 128^3",
                      "binding": {"M": 128, "N": 128, "K": 128}, "measured_ms": 0.029, "role": "fit"},
    "gemm_bf16_4096": {"src": "examples/gemm/gemm.etl", "bodies": "gemm", "what": "gemm bf16 4096^3",
                       "binding": {"M": 4096, "N": 4096, "K": 4096}, "measured_ms": 0.824,
                       "role": "pred"},
    "gemm_bf16_8192": {"src": "examples/gemm/gemm.etl", "bodies": "gemm", "what": "gemm bf16 8192^3",
                       "binding": {"M": 8192, "N": 8192, "K": 8192}, "measured_ms": 6.46,
                       "role": "pred"},
    "gemm_tf32_4096": {"src": "examples/gemm/gemm_tf32.etl", "bodies": "gemm_tf32",
                       "what": "gemm tf32 4096^3", "binding": {"M": 4096, "N": 4096, "K": 4096},
                       "measured_ms": 2.74, "role": "pred"},
    "mlp_bf16_4096": {"src": "examples/mlp/mlp_bf16.etl", "bodies": "mlp_bf16",
                      "what": "mlp bf16 T4096 D4096 F12288",
                      "binding": {"T": 4096, "D": 4096, "F": 12288}, "measured_ms": 28.5,
                      "role": "pred"},
    "prefill_g4": {"src": "examples/prefill_attention/prefill_attention.etl",
                   "bodies": "prefill_attention", "what": "prefill+o_proj S4096 32 heads HID4096",
                   "binding": {"S": 4096, "NKV": 8, "G": 4, "HID": 4096}, "measured_ms": 2.60,
                   "role": "pred"},
    "prefill_g1": {"src": "examples/prefill_attention/prefill_attention.etl",
                   "bodies": "prefill_attention", "what": "prefill+o_proj S4096 8 heads HID1024",
                   "binding": {"S": 4096, "NKV": 8, "G": 1, "HID": 1024}, "measured_ms": 0.68,
                   "role": "pred"},
    "decode_8b_b1": _dec(_8B, 1, 1024, 64, 0.749, "pred"),
    "decode_8b_b1_tk32": _dec(_8B, 1, 1024, 32, 0.90, "pred"),
    "decode_8b_b1_tk16": _dec(_8B, 1, 1024, 16, 1.36, "pred"),
    "decode_8b_b16": _dec(_8B, 16, 1024, 64, 3.69, "fit"),
    "decode_8b_b16_tk32": _dec(_8B, 16, 1024, 32, 3.91, "pred"),
    "decode_8b_b16_tk16": _dec(_8B, 16, 1024, 16, 4.31, "pred"),
    "decode_06b_b4": _dec(_06B, 4, 512, 64, 0.554, "pred"),
}
